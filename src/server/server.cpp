// server.cpp — Beast connections. Each connection runs on its own strand; a request that
// evaluates is handed to the WorkQueue and its reply posted back to the strand. An HTTP request
// is authorised on its header, and its body read only within the server-wide BodyBudget.
// WebSocket sessions keep a read outstanding at all times (Beast answers pings inside reads),
// queue the frames that arrive while one is being handled, and write replies in order.
#include "server/server.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

#include <csignal>
#include <cstdlib>
#include <deque>
#include <limits>
#include <list>
#include <vector>

#include "core/log.h"
#include "core/mutex.h"
#include "core/parallel.h"
#include "server/body_budget.h"
#include "server/work_queue.h"

namespace kevin::server {

namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
namespace net = boost::asio;
using tcp = net::ip::tcp;

bool is_loopback_host(const std::string& host) {
  if (host == "localhost") return true;
  boost::system::error_code ec;
  const auto address = net::ip::make_address(host, ec);
  return !ec && address.is_loopback();
}

Status check_exposure(const std::string& host, const std::string& token) {
  if (is_loopback_host(host) || !token.empty()) return Status::ok();
  return invalid_argument("--host " + host +
                          " is reachable from other machines: give --token-file with a bearer "
                          "token");
}

// A live connection the server can close at shutdown.
class Closable {
 public:
  virtual ~Closable() = default;
  virtual void shut() = 0;  // thread-safe: posts the close to the connection's strand
};

// What every connection shares: the routes, the work queue, the limits and the registry of
// live connections.
struct Shared {
  FrontEnd* front_end;
  WorkQueue* queue;
  BodyBudget* bodies;
  ServerOptions options;
  Mutex mu;
  CondVar all_closed;
  std::list<std::weak_ptr<Closable>> live GUARDED_BY(mu);
  int open GUARDED_BY(mu) = 0;

  ServerLoad load() const { return {queue->queued(), bodies->used()}; }

  std::list<std::weak_ptr<Closable>>::iterator enlist(const std::shared_ptr<Closable>& c) {
    MutexLock lock(mu);
    ++open;
    return live.insert(live.end(), c);
  }
  void delist(std::list<std::weak_ptr<Closable>>::iterator it) {
    {
      MutexLock lock(mu);
      live.erase(it);
      --open;
    }
    all_closed.notify_all();
  }
};

namespace {

// The most one read of an HTTP connection brings in (its buffer's size): so a chunked body
// grows by at most this much between two checks of its reservation, and a refused request
// leaves at most this much of its body read.
constexpr size_t kReadStep = size_t{64} << 10;

std::string_view view(beast::string_view s) { return {s.data(), s.size()}; }

// A request body and its share of the budget, freed together.
struct HeldBody {
  BodyReservation reservation;  // declared first: given back after the text is freed
  std::string text;
};

http::response<http::string_body> to_response(const HttpReply& reply, unsigned version,
                                              bool keep_alive) {
  http::response<http::string_body> res{static_cast<http::status>(reply.status), version};
  res.set(http::field::server, "kevin");
  res.set(http::field::content_type, reply.content_type);
  for (const auto& [name, value] : reply.headers) res.set(name, value);
  res.keep_alive(keep_alive);
  res.body() = reply.body;
  res.prepare_payload();
  return res;
}

class WsSession final : public Closable, public std::enable_shared_from_this<WsSession> {
 public:
  WsSession(tcp::socket&& socket, Shared* shared) : ws_(std::move(socket)), shared_(shared) {}
  ~WsSession() override {
    if (registered_) shared_->delist(entry_);
  }

  void start(http::request<http::string_body> request) {
    entry_ = shared_->enlist(shared_from_this());
    registered_ = true;
    beast::get_lowest_layer(ws_).expires_never();
    websocket::stream_base::timeout timeouts{};
    timeouts.handshake_timeout = std::chrono::seconds(30);
    timeouts.idle_timeout =
        std::chrono::seconds(600);  // a policy may think for minutes between steps
    timeouts.keep_alive_pings = true;
    ws_.set_option(timeouts);
    ws_.read_message_max(shared_->options.max_message_bytes);
    ws_.async_accept(request, beast::bind_front_handler(&WsSession::on_accept, shared_from_this()));
  }

  void shut() override {
    net::post(ws_.get_executor(), [self = shared_from_this()] { self->close_after_writes(); });
  }

 private:
  void on_accept(beast::error_code ec) {
    if (ec) return;
    SocketOpening opening = shared_->front_end->open_socket();
    if (auto* refused = std::get_if<SocketReply>(&opening)) return send(*refused);
    connection_ = std::move(std::get<std::unique_ptr<SocketConversation>>(opening));
    read();
  }

  void read() {
    ws_.async_read(buffer_, beast::bind_front_handler(&WsSession::on_read, shared_from_this()));
  }

  void on_read(beast::error_code ec, size_t) {
    if (ec) return;  // closed, timed out or over the size limit: the session ends here
    std::string frame = beast::buffers_to_string(buffer_.data());
    buffer_.consume(buffer_.size());
    if (closing_) return;
    if (static_cast<int>(inbox_.size()) >= shared_->options.max_queued_messages) {
      send(connection_->refusal("too many messages ahead of their replies; wait for each reply",
                                /*close=*/false));
    } else {
      inbox_.push_back(std::move(frame));
      if (!busy_) handle_next();
    }
    read();
  }

  void handle_next() {
    if (inbox_.empty() || closing_) return;
    busy_ = true;
    std::string frame = std::move(inbox_.front());
    inbox_.pop_front();
    auto self = shared_from_this();
    const bool queued = shared_->queue->submit([self, frame = std::move(frame)] {
      SocketReply reply = self->connection_->handle(frame);
      net::post(self->ws_.get_executor(), [self, reply = std::move(reply)] {
        self->busy_ = false;
        self->send(reply);
        self->handle_next();
      });
    });
    if (!queued) {
      busy_ = false;
      send(connection_->refusal("the server is stopping", /*close=*/true));
    }
  }

  void send(const SocketReply& reply) {
    if (!reply.text.empty() && !closed_) outbox_.push_back(reply.text);
    if (reply.close) closing_ = true;
    write_next();
  }

  void write_next() {
    if (writing_ || closed_) return;
    if (outbox_.empty()) {
      if (closing_) close();
      return;
    }
    writing_ = true;
    ws_.text(true);
    ws_.async_write(net::buffer(outbox_.front()),
                    beast::bind_front_handler(&WsSession::on_write, shared_from_this()));
  }

  void on_write(beast::error_code ec, size_t) {
    writing_ = false;
    outbox_.pop_front();
    if (ec) {
      closed_ = true;
      return;
    }
    write_next();
  }

  void close_after_writes() {
    closing_ = true;
    inbox_.clear();
    if (!busy_) write_next();
  }

  void close() {
    if (closed_) return;
    closed_ = true;
    ws_.async_close(websocket::close_code::normal,
                    [self = shared_from_this()](beast::error_code) {});
  }

  websocket::stream<beast::tcp_stream> ws_;
  Shared* shared_;
  std::list<std::weak_ptr<Closable>>::iterator entry_;
  bool registered_ = false;
  beast::flat_buffer buffer_;
  std::unique_ptr<SocketConversation> connection_;
  std::deque<std::string> inbox_;   // frames waiting to be handled
  std::deque<std::string> outbox_;  // frames waiting to be written
  bool busy_ = false, writing_ = false, closing_ = false, closed_ = false;
};

class HttpConnection final : public Closable, public std::enable_shared_from_this<HttpConnection> {
 public:
  HttpConnection(tcp::socket&& socket, Shared* shared)
      : stream_(std::move(socket)), shared_(shared), reserved_(shared->bodies) {}
  ~HttpConnection() override {
    if (registered_) shared_->delist(entry_);
  }

  void start() {
    entry_ = shared_->enlist(shared_from_this());
    registered_ = true;
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->read(); });
  }

  void shut() override {
    net::post(stream_.get_executor(), [self = shared_from_this()] {
      self->stopping_ = true;
      if (!self->busy_) self->close();
    });
  }

 private:
  void read() {
    if (stopping_) return close();
    parser_.emplace();
    // No limit while the header is read: the token is checked before the declared size. (Not
    // boost::none: Boost 1.74's parser takes that for a limit below every Content-Length.)
    parser_->body_limit(std::numeric_limits<std::uint64_t>::max());
    stream_.expires_after(shared_->options.request_timeout);  // idle or slow: closed
    http::async_read_header(
        stream_, buffer_, *parser_,
        beast::bind_front_handler(&HttpConnection::on_header, shared_from_this()));
  }

  // Everything here is decided on the header alone, so a client without the token never has
  // a byte of its body buffered, and never holds any of the budget.
  void on_header(beast::error_code ec, size_t) {
    if (ec) return close();
    const auto& header = parser_->get();
    path_ = request_path(view(header.target()));
    if (!shared_->front_end->open_path(path_) &&
        !bearer_authorized(view(header[http::field::authorization]), shared_->options.token)) {
      HttpReply denied = shared_->front_end->error(
          401, "missing or wrong bearer token (Authorization: Bearer <token>)");
      denied.headers.emplace_back("WWW-Authenticate", "Bearer");
      return refuse(denied);
    }
    if (parser_->is_done() || !shared_->front_end->takes_body(view(header.method_string()), path_))
      return on_request();
    if (parser_->content_length().value_or(0) > shared_->options.max_body_bytes)
      return refuse(too_large());
    parser_->body_limit(shared_->options.max_body_bytes);
    // The budget is held at most this long: a client that stalls mid-body is closed.
    stream_.expires_after(shared_->options.request_timeout);
    read_body();
  }

  // A declared length is reserved whole before the first byte of the body is read; a chunked
  // body one read ahead of what has arrived, and shrunk to its size once complete.
  void read_body() {
    const size_t arrived = parser_->get().body().size();
    if (parser_->is_done()) {
      reserved_.resize(arrived);
      return on_request();
    }
    const size_t wanted = parser_->content_length().value_or(
        std::min(shared_->options.max_body_bytes, arrived + kReadStep));
    if (!reserved_.resize(wanted)) {
      HttpReply full = shared_->front_end->error(
          503, "the server is receiving as many request bodies as it holds at once (" +
                   std::to_string(shared_->bodies->capacity()) + " bytes); retry later");
      full.headers.emplace_back("Retry-After", "1");
      return refuse(full);
    }
    http::async_read_some(
        stream_, buffer_, *parser_,
        beast::bind_front_handler(&HttpConnection::on_body_part, shared_from_this()));
  }

  void on_body_part(beast::error_code ec, size_t) {
    if (ec == http::error::body_limit) return refuse(too_large());
    if (ec) return close();  // closed, reset or timed out: the budget goes with the connection
    read_body();
  }

  void on_request() {
    const bool whole = parser_->is_done();  // a body left unread makes the connection unusable
    http::request<http::string_body> request = parser_->release();
    if (websocket::is_upgrade(request)) {
      if (path_ != "/ws")
        return reply(shared_->front_end->error(404, "WebSocket sessions are served at /ws"),
                     request.version(), false);
      stream_.expires_never();
      std::make_shared<WsSession>(stream_.release_socket(), shared_)->start(std::move(request));
      return;
    }
    const std::string method(request.method_string());
    const unsigned version = request.version();
    const bool keep_alive = request.keep_alive() && whole;
    if (shared_->front_end->quick(method, path_))
      return reply(shared_->front_end->handle(method, path_, "", shared_->load()), version,
                   keep_alive);
    busy_ = true;
    stream_.expires_never();
    auto self = shared_from_this();
    const bool queued =
        shared_->queue->submit([self, method, target = std::string(request.target()),
                                body = std::make_shared<HeldBody>(
                                    HeldBody{std::move(reserved_), std::move(request.body())}),
                                version, keep_alive]() mutable {
          HttpReply answer =
              self->shared_->front_end->handle(method, target, body->text, self->shared_->load());
          body.reset();  // the budget is whole again before the client has its answer
          net::post(self->stream_.get_executor(),
                    [self, answer = std::move(answer), version, keep_alive] {
                      self->busy_ = false;
                      self->reply(answer, version, keep_alive && !self->stopping_);
                    });
        });
    if (!queued) {
      busy_ = false;
      reply(shared_->front_end->error(503, "the server is stopping"), version, false);
    }
  }

  HttpReply too_large() const {
    return shared_->front_end->error(
        413, "request body over " + std::to_string(shared_->options.max_body_bytes) + " bytes");
  }

  // Answers without reading the rest of the body, then closes. The parser (with any part of
  // the body) and the reservation go first: a client slow to read the answer holds neither.
  void refuse(const HttpReply& answer) {
    const unsigned version = parser_->get().version();
    parser_.reset();
    reserved_.resize(0);
    reply(answer, version, false);
  }

  void reply(const HttpReply& answer, unsigned version, bool keep_alive) {
    response_ = std::make_shared<http::response<http::string_body>>(
        to_response(answer, version, keep_alive));
    stream_.expires_after(std::chrono::seconds(60));
    http::async_write(stream_, *response_,
                      [self = shared_from_this(), keep_alive](beast::error_code ec, size_t) {
                        if (ec || !keep_alive) return self->close();
                        self->read();
                      });
  }

  void close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.close();
  }

  beast::tcp_stream stream_;
  Shared* shared_;
  std::list<std::weak_ptr<Closable>>::iterator entry_;
  bool registered_ = false;
  beast::flat_buffer buffer_{kReadStep};
  BodyReservation reserved_;  // declared before the parser: given back after its body is freed
  std::optional<http::request_parser<http::string_body>> parser_;
  std::string path_;  // of the request being read or handled
  std::shared_ptr<http::response<http::string_body>> response_;
  bool busy_ = false, stopping_ = false;
};

}  // namespace

class Server::Impl {
 public:
  Impl(FrontEnd* front_end, ServerOptions options)
      : front_end_(front_end),
        queue_(options.eval_threads > 0 ? options.eval_threads : front_end->default_workers()),
        bodies_(options.max_buffered_body_bytes > 0 ? options.max_buffered_body_bytes
                                                    : 4 * options.max_body_bytes),
        shared_{front_end, &queue_, &bodies_, options, {}, {}, {}, 0},
        acceptor_(net::make_strand(ioc_)) {}

  Status listen(const std::string& host, uint16_t port, uint16_t* bound) {
    boost::system::error_code ec;
    const auto address = net::ip::make_address(host == "localhost" ? "127.0.0.1" : host, ec);
    if (ec) return invalid_argument("--host " + host + " is not an IP address");
    const tcp::endpoint endpoint{address, port};
    acceptor_.open(endpoint.protocol(), ec);
    if (!ec) acceptor_.set_option(net::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(net::socket_base::max_listen_connections, ec);
    if (ec)
      return unavailable("cannot listen on " + host + ":" + std::to_string(port) + ": " +
                         ec.message());
    *bound = acceptor_.local_endpoint().port();
    return Status::ok();
  }

  Status run(bool handle_signals) {
    accept();
    net::signal_set signals(ioc_);
    if (handle_signals) {
      signals.add(SIGINT);
      signals.add(SIGTERM);
      wait_for_signal(signals);
    }
    // Worker 0 (this thread) waits for stop() and shuts down; the others serve the network.
    const size_t io_threads = static_cast<size_t>(std::max(shared_.options.io_threads, 1));
    run_workers(io_threads + 1, [&](size_t worker) {
      if (worker > 0) {
        ioc_.run();
        return;
      }
      stop_.wait();
      shut_down();
      signals.cancel();
      ioc_.stop();
    });
    return Status::ok();
  }

  void stop() { stop_.notify(); }

 private:
  void accept() {
    acceptor_.async_accept(net::make_strand(ioc_),
                           [this](beast::error_code ec, tcp::socket socket) {
                             if (ec) return;  // the acceptor was closed
                             std::make_shared<HttpConnection>(std::move(socket), &shared_)->start();
                             accept();
                           });
  }

  void wait_for_signal(net::signal_set& signals) {
    signals.async_wait([this, &signals](beast::error_code ec, int signal) {
      if (ec) return;
      if (signals_seen_++ > 0) {
        KEVIN_LOG(warn) << "server: second signal: exiting now";
        std::_Exit(130);
      }
      KEVIN_LOG(info) << "server: signal " << signal
                      << ": finishing the requests in flight (again to exit at once)";
      stop();
      wait_for_signal(signals);
    });
  }

  // No new sessions or evaluations; the ones in flight are answered; then every connection
  // is closed and, within the drain timeout, its last writes flushed.
  void shut_down() {
    front_end_->begin_shutdown();
    // On the acceptor's strand: an accept's completion (which starts the next accept) may be
    // running on another I/O thread, and the acceptor is not safe to use from two at once.
    net::post(acceptor_.get_executor(), [this] {
      beast::error_code ignored;
      acceptor_.close(ignored);
    });
    queue_.finish();
    std::list<std::shared_ptr<Closable>> live;
    {
      MutexLock lock(shared_.mu);
      for (auto& weak : shared_.live) {
        if (auto c = weak.lock()) live.push_back(c);
      }
    }
    for (auto& c : live) c->shut();
    live.clear();
    const auto deadline = CondVar::Clock::now() + shared_.options.drain_timeout;
    MutexLock lock(shared_.mu);
    while (shared_.open > 0 && shared_.all_closed.wait_until(shared_.mu, deadline)) {
    }
  }

  FrontEnd* front_end_;
  WorkQueue queue_;
  BodyBudget bodies_;  // before the connections (in ioc_), which give their shares back
  Shared shared_;
  net::io_context ioc_;
  tcp::acceptor acceptor_;  // on its own strand: accepts and the close are serialised
  Notification stop_;
  int signals_seen_ = 0;  // only in the signal handler, which never runs twice at once
};

Result<std::unique_ptr<Server>> Server::create(FrontEnd* front_end, ServerOptions options) {
  KEVIN_RETURN_IF_ERROR(check_exposure(options.host, options.token));
  if (options.max_buffered_body_bytes > 0 &&
      options.max_buffered_body_bytes < options.max_body_bytes) {
    return invalid_argument(
        "--max-buffered-body-mb is below --max-body-mb: a body at the limit could never be read");
  }
  const std::string host = options.host;
  const uint16_t port = options.port;
  auto impl = std::make_unique<Impl>(front_end, std::move(options));
  uint16_t bound = 0;
  KEVIN_RETURN_IF_ERROR(impl->listen(host, port, &bound));
  return std::unique_ptr<Server>(new Server(std::move(impl), bound));
}

Server::Server(std::unique_ptr<Impl> impl, uint16_t port) : impl_(std::move(impl)), port_(port) {}
Server::~Server() = default;

Status Server::run(bool handle_signals) { return impl_->run(handle_signals); }
void Server::stop() { impl_->stop(); }

}  // namespace kevin::server
