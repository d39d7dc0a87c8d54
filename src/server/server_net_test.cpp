// server_net_test.cpp — the server over real loopback sockets (Beast clients, fake
// evaluator): pings answered during an evaluation, sessions not blocking each other,
// capacity, bearer tokens, body limits, and a shutdown that answers what is in flight.
#include <gtest/gtest.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

#include <atomic>
#include <chrono>
#include <thread>

#include "env/fake_evaluator.h"
#include "server/server.h"
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

class NetTest : public ::testing::Test {
 protected:
  void start(int max_sessions = 8, std::string token = "", size_t max_body = size_t{1} << 20) {
    ServiceOptions o;
    o.max_sessions = max_sessions;
    o.adhoc_dir = scratch_.path();
    auto tasks =
        tasks::discover_tasks(std::filesystem::path(KEVIN_SOURCE_DIR) / "tests/fixtures/tasks");
    ASSERT_TRUE(tasks.is_ok());
    service_ = std::make_unique<EnvService>(&evaluator_, *tasks, o);
    ServerOptions so;
    so.port = 0;
    so.token = std::move(token);
    so.max_body_bytes = max_body;
    auto s = Server::create(service_.get(), so);
    ASSERT_TRUE(s.is_ok()) << s.status().to_string();
    server_ = std::move(s).value();
    thread_ = std::thread([this] { ran_ = server_->run(false); });
  }
  void TearDown() override {
    if (server_) server_->stop();
    if (thread_.joinable()) thread_.join();
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

  sys::TempDir scratch_ = std::move(sys::TempDir::create("kevin-server-test-")).value();
  env::FakeEvaluator evaluator_{"cpu", "Fake CPU"};
  std::unique_ptr<EnvService> service_;
  std::unique_ptr<Server> server_;
  std::thread thread_;
  Status ran_;
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
  ServerOptions so;
  so.host = "0.0.0.0";
  so.port = 0;
  auto refused = Server::create(&service, so);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find(
                "--host 0.0.0.0 is reachable from other machines: give --token-file"),
            std::string::npos)
      << refused.status().to_string();
  so.host = "not-an-address";
  so.token = "t";
  auto unparsed = Server::create(&service, so);
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
  thread_.join();
  EXPECT_TRUE(ran_.is_ok()) << ran_.to_string();
}

}  // namespace
}  // namespace kevin::server
