// server_net_test.cpp — the server over real loopback sockets (Beast clients, fake
// evaluator): pings answered during an evaluation, sessions not blocking each other,
// capacity, bearer tokens checked before any body is read, body limits and the server-wide
// body budget, and a shutdown that answers what is in flight.
#include <gtest/gtest.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

#include <atomic>
#include <chrono>
#include <sstream>
#include <thread>

#include "env/fake_evaluator.h"
#include "server/routes.h"
#include "server/server.h"
#include "server/server_test_support.h"
#include "sys/tempdir.h"

namespace kevin::server {
namespace {
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::string step(const std::string& directive) {
  return dump_json(
      {{"type", "step"}, {"data", {{"code", "```cpp\n// fake: " + directive + "\n```"}}}});
}
constexpr const char* kReset =
    R"({"type":"reset","data":{"problem_id":"vector_add","max_turns":3}})";
constexpr size_t kKiB = size_t{1} << 10, kMiB = size_t{1} << 20;

// A request's head (request line and header, blank line included) with no body after it.
std::string head(const std::string& target, const std::string& authorization,
                 const std::string& length_field) {
  return "POST " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
         (authorization.empty() ? "" : "Authorization: " + authorization + "\r\n") +
         "Content-Type: application/json\r\n" + length_field + "\r\n\r\n";
}
std::string post_head(const std::string& target, size_t length,
                      const std::string& authorization = "") {
  return head(target, authorization, "Content-Length: " + std::to_string(length));
}
std::string chunked_head(const std::string& target) {
  return head(target, "", "Transfer-Encoding: chunked");
}
std::string chunk(const std::string& data) {
  std::ostringstream size;
  size << std::hex << data.size();
  return size.str() + "\r\n" + data + "\r\n";
}
// An /evaluate request of exactly `size` bytes (JSON padded with spaces).
std::string evaluation(const std::string& task_id, size_t size) {
  std::string body = dump_json(
      {{"task_id", task_id}, {"problem_id", "vector_add"}, {"kernel_code", "// fake: correct\n"}});
  body.resize(size, ' ');
  return body;
}

class NetTest : public ::testing::Test {
 protected:
  void start(int max_sessions = 8, std::string token = "", size_t max_body = size_t{1} << 20) {
    ServerOptions so;
    so.token = std::move(token);
    so.max_body_bytes = max_body;
    serve(so, max_sessions);
  }
  // A server on a free port with these options; the token is kept for the helpers below.
  void serve(ServerOptions so, int max_sessions = 8) {
    ServiceOptions o;
    o.max_sessions = max_sessions;
    o.adhoc_dir = scratch_.path();
    auto tasks =
        tasks::discover_tasks(std::filesystem::path(KEVIN_SOURCE_DIR) / "tests/fixtures/tasks");
    ASSERT_TRUE(tasks.is_ok());
    service_ = std::make_unique<EnvService>(&evaluator_, *tasks, o);
    gym_ = std::make_unique<KernelGymApi>(service_.get());
    routes_ = std::make_unique<EnvRoutes>(service_.get(), gym_.get());
    authorization_ = so.token.empty() ? "" : "Bearer " + so.token;
    auto s = LoopbackServer::start(routes_.get(), so);
    ASSERT_TRUE(s.is_ok()) << s.status().to_string();
    server_ = std::move(s).value();
  }

  // A connected WebSocket client on /ws.
  std::unique_ptr<websocket::stream<tcp::socket>> open_ws() {
    auto ws = std::make_unique<websocket::stream<tcp::socket>>(ioc_);
    tcp::resolver resolver(ioc_);
    net::connect(ws->next_layer(), resolver.resolve("127.0.0.1", std::to_string(server_->port())));
    ws->handshake("127.0.0.1", "/ws");
    return ws;
  }
  static Json exchange(websocket::stream<tcp::socket>& ws, const std::string& message) {
    ws.write(net::buffer(message));
    return receive(ws);
  }
  static Json receive(websocket::stream<tcp::socket>& ws) {
    beast::flat_buffer buffer;
    ws.read(buffer);
    return *parse_json(beast::buffers_to_string(buffer.data()));
  }
  http::response<http::string_body> request(http::verb verb, const std::string& target,
                                            const std::string& body = "",
                                            const std::string& authorization = "") {
    tcp::socket socket(ioc_);
    tcp::resolver resolver(ioc_);
    net::connect(socket, resolver.resolve("127.0.0.1", std::to_string(server_->port())));
    http::request<http::string_body> req{verb, target, 11};
    req.set(http::field::host, "127.0.0.1");
    if (!authorization.empty()) req.set(http::field::authorization, authorization);
    req.body() = body;
    req.prepare_payload();
    http::write(socket, req);
    beast::flat_buffer buffer;
    http::response<http::string_body> res;
    beast::error_code ec;
    http::read(socket, buffer, res, ec);
    return res;
  }

  // A connection on which `text` (a request's head, maybe some of its body) has been sent.
  std::unique_ptr<beast::tcp_stream> send_raw(const std::string& text) {
    auto stream = std::make_unique<beast::tcp_stream>(ioc_);
    tcp::resolver resolver(ioc_);
    stream->connect(resolver.resolve("127.0.0.1", std::to_string(server_->port())));
    net::write(*stream, net::buffer(text));
    return stream;
  }
  // The next response on `stream`, or `ec` (end_of_stream once the server has closed it);
  // waits at most 5 s, far less than the server's 60 s for a body.
  http::response<http::string_body> read_response(beast::tcp_stream& stream,
                                                  beast::error_code& ec) {
    stream.expires_after(std::chrono::seconds(5));
    beast::flat_buffer buffer;
    http::response<http::string_body> res;
    http::async_read(stream, buffer, res, [&](beast::error_code e, size_t) { ec = e; });
    ioc_.restart();
    ioc_.run();
    return res;
  }
  // The server's kevin_request_body_bytes_reserved gauge, from GET /metrics.
  size_t reserved_body_bytes() {
    const std::string text = request(http::verb::get, "/metrics", "", authorization_).body();
    const std::string name = "\nkevin_request_body_bytes_reserved ";
    const size_t at = text.find(name);
    EXPECT_NE(at, std::string::npos) << text;
    return at == std::string::npos ? 0 : std::stoull(text.substr(at + name.size()));
  }
  // The gauge once it reads `bytes`, or its last reading after 5 s.
  size_t await_reserved(size_t bytes) {
    size_t seen = reserved_body_bytes();
    for (int i = 0; i < 250 && seen != bytes; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      seen = reserved_body_bytes();
    }
    return seen;
  }

  sys::TempDir scratch_ = std::move(sys::TempDir::create("kevin-server-test-")).value();
  env::FakeEvaluator evaluator_{"cpu", "Fake CPU"};
  std::unique_ptr<EnvService> service_;
  std::unique_ptr<KernelGymApi> gym_;
  std::unique_ptr<EnvRoutes> routes_;
  std::unique_ptr<LoopbackServer> server_;
  std::string authorization_;  // for the helpers' own requests
  net::io_context ioc_;
};

TEST_F(NetTest, PingsAreAnsweredWhileAStepEvaluates) {
  start();
  auto ws = open_ws();
  ASSERT_EQ(exchange(*ws, kReset)["type"], "observation");
  std::atomic<double> pong_at{-1};
  const auto sent = Clock::now();
  ws->control_callback([&](websocket::frame_type kind, beast::string_view) {
    if (kind == websocket::frame_type::pong) pong_at = seconds_since(sent);
  });
  ws->write(net::buffer(step("correct delay_ms=1500")));
  ws->ping({});
  const Json reply = receive(*ws);  // control frames are handled inside this read
  const double replied_at = seconds_since(sent);
  EXPECT_EQ(reply["data"]["observation"]["verdict"], "correct");
  ASSERT_GE(pong_at.load(), 0) << "no pong";
  EXPECT_LT(pong_at.load(), 0.5) << "the pong waited for the evaluation";
  EXPECT_GE(replied_at, 1.4);
}

TEST_F(NetTest, ASlowSessionDoesNotDelayAnotherSessionsReply) {
  start();
  auto slow = open_ws();
  auto quick = open_ws();
  ASSERT_EQ(exchange(*slow, kReset)["type"], "observation");
  ASSERT_EQ(exchange(*quick, kReset)["type"], "observation");
  slow->write(net::buffer(step("timeout delay_ms=3000")));
  const auto start_quick = Clock::now();
  const Json reply = exchange(*quick, step("correct"));
  EXPECT_EQ(reply["data"]["observation"]["verdict"], "correct");
  EXPECT_LT(seconds_since(start_quick), 1.0) << "the quick reply waited behind the slow session";
  EXPECT_EQ(receive(*slow)["data"]["observation"]["verdict"], "timeout");
}

TEST_F(NetTest, ASessionBeyondCapacityGetsCapacityReachedAndIsClosed) {
  start(/*max_sessions=*/1);
  auto first = open_ws();
  ASSERT_EQ(exchange(*first, kReset)["type"], "observation");
  auto second = open_ws();
  const Json refused = receive(*second);
  EXPECT_EQ(refused["type"], "error");
  EXPECT_EQ(refused["data"]["code"], "CAPACITY_REACHED");
  EXPECT_EQ(refused["data"]["active_sessions"], 1);
  EXPECT_EQ(refused["data"]["max_sessions"], 1);
  beast::flat_buffer buffer;
  beast::error_code ec;
  second->read(buffer, ec);
  EXPECT_EQ(ec, websocket::error::closed) << ec.message();
  first->close(websocket::close_code::normal);
  // The slot frees once the server sees the close.
  for (int i = 0; i < 50 && service_->metrics().active_sessions() > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  auto third = open_ws();
  EXPECT_EQ(exchange(*third, kReset)["type"], "observation");
}

TEST_F(NetTest, EveryRouteButHealthNeedsTheBearerToken) {
  start(8, "tok-123");
  EXPECT_EQ(request(http::verb::get, "/health").result_int(), 200u);
  const auto denied = request(http::verb::get, "/metadata");
  EXPECT_EQ(denied.result_int(), 401u);
  EXPECT_EQ(denied[http::field::www_authenticate], "Bearer");
  EXPECT_EQ(request(http::verb::get, "/metadata", "", "Bearer wrong").result_int(), 401u);
  EXPECT_EQ(request(http::verb::get, "/metadata", "", "Bearer tok-123").result_int(), 200u);
  // The WebSocket upgrade is refused without it.
  websocket::stream<tcp::socket> ws(ioc_);
  tcp::resolver resolver(ioc_);
  net::connect(ws.next_layer(), resolver.resolve("127.0.0.1", std::to_string(server_->port())));
  beast::error_code ec;
  ws.handshake("127.0.0.1", "/ws", ec);
  EXPECT_TRUE(ec) << "handshake without a token succeeded";
}

TEST_F(NetTest, AHostReachableFromOtherMachinesNeedsAToken) {
  ServiceOptions o;
  std::vector<tasks::TaskInfo> tasks = {{"t/x", "t", "unknown", "/dev/null"}};
  EnvService service(&evaluator_, tasks, o);
  KernelGymApi gym(&service);
  EnvRoutes routes(&service, &gym);
  ServerOptions so;
  so.host = "0.0.0.0";
  so.port = 0;
  auto refused = Server::create(&routes, so);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find(
                "--host 0.0.0.0 is reachable from other machines: give --token-file"),
            std::string::npos)
      << refused.status().to_string();
  so.host = "not-an-address";
  so.token = "t";
  auto unparsed = Server::create(&routes, so);
  EXPECT_EQ(unparsed.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(unparsed.status().message().find("--host not-an-address is not an IP address"),
            std::string::npos)
      << unparsed.status().to_string();
  EXPECT_TRUE(is_loopback_host("127.0.0.2"));
  EXPECT_TRUE(is_loopback_host("::1"));
  EXPECT_FALSE(is_loopback_host("10.0.0.1"));
}

TEST_F(NetTest, AnOversizedBodyIs413AndTheServerGoesOn) {
  start(8, "", /*max_body=*/4096);
  EXPECT_EQ(request(http::verb::post, "/evaluate", std::string(10000, 'x')).result_int(), 413u);
  EXPECT_EQ(request(http::verb::get, "/health").result_int(), 200u);
  const auto evaluated =
      request(http::verb::post, "/evaluate",
              R"({"task_id":"n1","problem_id":"vector_add","kernel_code":"// fake: correct\n"})");
  EXPECT_EQ(evaluated.result_int(), 200u) << evaluated.body();
}

TEST_F(NetTest, AWrongOrMissingTokenIs401BeforeAnyOfTheBodyIsRead) {
  ServerOptions so;
  so.token = "tok-123";
  so.max_body_bytes = 64 * kMiB;
  serve(so);
  // Each client sends only the head of a large upload: an answer that waited for the body
  // would never come (read_response gives up after 5 s).
  for (const std::string& authorization : {std::string("Bearer wrong"), std::string()}) {
    auto client = send_raw(post_head("/evaluate", 50 * kMiB, authorization));
    beast::error_code ec;
    const auto denied = read_response(*client, ec);
    ASSERT_FALSE(ec) << authorization << ": " << ec.message();
    EXPECT_EQ(denied.result_int(), 401u);
    EXPECT_NE(denied.body().find("missing or wrong bearer token"), std::string::npos)
        << denied.body();
    EXPECT_EQ(denied[http::field::www_authenticate], "Bearer");
    EXPECT_FALSE(denied.keep_alive());
    read_response(*client, ec);
    EXPECT_EQ(ec, http::error::end_of_stream) << "the connection stayed open: " << ec.message();
  }
  // The token is checked before the size: a client without it learns nothing else.
  auto oversized = send_raw(post_head("/evaluate", 100 * kMiB));
  beast::error_code ec;
  EXPECT_EQ(read_response(*oversized, ec).result_int(), 401u) << ec.message();
  // /health is open without the token, so it never has a body read either.
  auto open_route = send_raw(post_head("/health", 50 * kMiB));
  const auto answered = read_response(*open_route, ec);
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(answered.result_int(), 405u);
  EXPECT_FALSE(answered.keep_alive()) << "its unread body would be taken for the next request";
  EXPECT_EQ(reserved_body_bytes(), 0u);
  EXPECT_EQ(request(http::verb::get, "/metadata", "", "Bearer tok-123").result_int(), 200u);
}

TEST_F(NetTest, BodiesBeyondTheServerWideBudgetAre503UntilItIsFreeAgain) {
  ServerOptions so;
  so.token = "tok";
  so.max_body_bytes = kMiB;
  so.max_buffered_body_bytes = 2 * kMiB;
  serve(so);
  // Two uploads whose heads have arrived hold the whole budget before their bodies do.
  auto first = send_raw(post_head("/evaluate", kMiB, "Bearer tok"));
  ASSERT_EQ(await_reserved(kMiB), kMiB);
  auto second = send_raw(post_head("/evaluate", kMiB, "Bearer tok"));
  ASSERT_EQ(await_reserved(2 * kMiB), 2 * kMiB);
  auto third = send_raw(post_head("/evaluate", kMiB, "Bearer tok"));
  beast::error_code ec;
  const auto refused = read_response(*third, ec);
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(refused.result_int(), 503u);
  EXPECT_NE(refused.body().find("as many request bodies as it holds at once (2097152 bytes); "
                                "retry later"),
            std::string::npos)
      << refused.body();
  EXPECT_EQ(refused[http::field::retry_after], "1");
  read_response(*third, ec);
  EXPECT_EQ(ec, http::error::end_of_stream) << "the refused connection stayed open";
  EXPECT_EQ(reserved_body_bytes(), 2 * kMiB) << "the refused upload reserved nothing";

  net::write(*first, net::buffer(evaluation("budget-1", kMiB)));
  net::write(*second, net::buffer(evaluation("budget-2", kMiB)));
  for (auto* client : {first.get(), second.get()}) {
    const auto evaluated = read_response(*client, ec);
    ASSERT_FALSE(ec) << ec.message();
    EXPECT_EQ(evaluated.result_int(), 200u) << evaluated.body();
    EXPECT_NE(evaluated.body().find("\"correctness\":true"), std::string::npos);
  }
  EXPECT_EQ(reserved_body_bytes(), 0u) << "a body's share is given back before its answer";
  const auto again =
      request(http::verb::post, "/evaluate", evaluation("budget-3", kMiB), "Bearer tok");
  EXPECT_EQ(again.result_int(), 200u) << again.body();
}

TEST_F(NetTest, AClientThatDisconnectsMidBodyGivesItsBudgetBack) {
  ServerOptions so;
  so.max_body_bytes = kMiB;
  so.max_buffered_body_bytes = kMiB;
  serve(so);
  auto client = send_raw(post_head("/evaluate", kMiB) + evaluation("gone", kMiB / 2));
  ASSERT_EQ(await_reserved(kMiB), kMiB);
  client->close();
  EXPECT_EQ(await_reserved(0), 0u);
  const auto next = request(http::verb::post, "/evaluate", evaluation("after-gone", kMiB));
  EXPECT_EQ(next.result_int(), 200u) << next.body();
}

TEST_F(NetTest, ABodyStalledPastTheRequestTimeoutIsClosedAndItsBudgetFreed) {
  ServerOptions so;
  so.max_body_bytes = kMiB;
  so.max_buffered_body_bytes = kMiB;
  so.request_timeout = std::chrono::seconds(1);
  serve(so);
  auto stalled = send_raw(post_head("/evaluate", kMiB) + evaluation("stalled", kMiB / 2));
  ASSERT_EQ(await_reserved(kMiB), kMiB);
  const auto stalled_at = Clock::now();
  EXPECT_EQ(await_reserved(0), 0u);
  EXPECT_GE(seconds_since(stalled_at), 0.5) << "freed long before the timeout";
  beast::error_code ec;
  read_response(*stalled, ec);
  EXPECT_EQ(ec, http::error::end_of_stream) << "the stalled connection was not closed";
  const auto next = request(http::verb::post, "/evaluate", evaluation("after-stall", kMiB));
  EXPECT_EQ(next.result_int(), 200u) << next.body();
}

TEST_F(NetTest, AChunkedBodyIsReservedAsItArrivesAndCappedAtTheBodyLimit) {
  ServerOptions so;
  so.max_body_bytes = kMiB;
  so.max_buffered_body_bytes = kMiB;
  serve(so);
  auto chunked = send_raw(chunked_head("/evaluate") + chunk(evaluation("chunked", 256 * kKiB)));
  // What has arrived plus one read's worth (64 KiB) ahead.
  ASSERT_EQ(await_reserved(320 * kKiB), 320 * kKiB);
  auto too_many = send_raw(post_head("/evaluate", 768 * kKiB));
  beast::error_code ec;
  EXPECT_EQ(read_response(*too_many, ec).result_int(), 503u) << ec.message();
  net::write(*chunked, net::buffer(chunk(std::string(128 * kKiB, ' ')) + "0\r\n\r\n"));
  const auto evaluated = read_response(*chunked, ec);
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(evaluated.result_int(), 200u) << evaluated.body();
  EXPECT_EQ(reserved_body_bytes(), 0u);
  // A chunk that would pass the limit is refused on its size line, before its data.
  auto oversized =
      send_raw(chunked_head("/evaluate") + chunk(std::string(kMiB / 2, ' ')) + "80001\r\n");
  const auto refused = read_response(*oversized, ec);
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(refused.result_int(), 413u);
  EXPECT_NE(refused.body().find("request body over 1048576 bytes"), std::string::npos)
      << refused.body();
  EXPECT_EQ(await_reserved(0), 0u);
}

TEST_F(NetTest, ABodyBudgetBelowTheBodyLimitIsRefusedAtStart) {
  ServiceOptions o;
  std::vector<tasks::TaskInfo> tasks = {{"t/x", "t", "unknown", "/dev/null"}};
  EnvService service(&evaluator_, tasks, o);
  KernelGymApi gym(&service);
  EnvRoutes routes(&service, &gym);
  ServerOptions so;
  so.port = 0;
  so.max_body_bytes = 2 * kMiB;
  so.max_buffered_body_bytes = kMiB;
  auto refused = Server::create(&routes, so);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("--max-buffered-body-mb is below --max-body-mb"),
            std::string::npos)
      << refused.status().to_string();
}

TEST_F(NetTest, StoppingAnswersTheEvaluationInFlightThenCloses) {
  start();
  auto ws = open_ws();
  ASSERT_EQ(exchange(*ws, kReset)["type"], "observation");
  ws->write(net::buffer(step("correct delay_ms=800")));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  server_->stop();
  EXPECT_EQ(receive(*ws)["data"]["observation"]["verdict"], "correct")
      << "the evaluation in flight was answered";
  beast::flat_buffer buffer;
  beast::error_code ec;
  ws->read(buffer, ec);
  EXPECT_TRUE(ec) << "the connection stayed open";
  const Status ran = server_->finish();
  EXPECT_TRUE(ran.is_ok()) << ran.to_string();
}

}  // namespace
}  // namespace kevin::server
