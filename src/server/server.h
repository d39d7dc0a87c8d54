// server.h — the network half of kevin's servers on Boost.Beast: an HTTP/1.1 listener whose
// routes and /ws WebSocket sessions are a front end's (front_end.h). Network threads only read,
// write and route; anything that may block runs on a WorkQueue, so pings are answered and other
// sessions served while the engine works.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"
#include "server/front_end.h"

namespace kevin::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 8000;  // 0: any free port (Server::port() tells which)
  std::string token;     // bearer token; required unless the host is loopback
  int io_threads = 2;    // network threads
  int eval_threads = 0;  // threads for requests that may block; 0: the front end's default
  size_t max_body_bytes = size_t{64} << 20;    // an HTTP request body (a batch of candidates)
  size_t max_message_bytes = size_t{8} << 20;  // a WebSocket message (one model reply)
  int max_queued_messages = 8;                 // frames a session may send ahead of its replies
  std::chrono::seconds drain_timeout{5};       // wait for replies to be written at shutdown
  // HTTP request bodies held at once, all connections together: at least max_body_bytes, or
  // 0 for 4 × max_body_bytes.
  size_t max_buffered_body_bytes = 0;
  // For an HTTP request's header to arrive (idle keep-alive time included), then again for its
  // body: a slow sender is closed and gives its share of the body budget back.
  std::chrono::seconds request_timeout{60};
};

// True for 127.0.0.0/8, ::1 and "localhost".
bool is_loopback_host(const std::string& host);
// A server other machines can reach must ask for a bearer token: kInvalidArgument for a host
// that is not loopback with an empty `token`, ok otherwise. Server::create checks it; commands
// check it before they start what they serve.
Status check_exposure(const std::string& host, const std::string& token);

class Server {
 public:
  // Binds and listens. `front_end` is borrowed and outlives the server. Errors: kInvalidArgument (a
  // host that is not an address, a non-loopback host without a token, or a body budget below the
  // body limit), kUnavailable (the port is taken).
  static Result<std::unique_ptr<Server>> create(FrontEnd* front_end, ServerOptions options);
  ~Server();

  uint16_t port() const { return port_; }
  // Serves until stop() is called or (with `handle_signals`) SIGINT/SIGTERM arrives; a second
  // signal exits the process at once (code 130). Then: refuses new sessions and evaluations,
  // waits for the evaluations in flight to be answered, closes every connection, and
  // returns. Call once.
  Status run(bool handle_signals);
  // Asks run() to shut down. Thread-safe; returns at once.
  void stop();

  class Impl;

 private:
  explicit Server(std::unique_ptr<Impl> impl, uint16_t port);
  std::unique_ptr<Impl> impl_;
  uint16_t port_;
};

}  // namespace kevin::server
