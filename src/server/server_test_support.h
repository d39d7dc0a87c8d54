// server_test_support.h — test support (linked into tests only): a Server on a free loopback
// port, run on a thread of its own, and stopped and joined when it goes out of scope.
#pragma once

#include <memory>
#include <thread>

#include "server/server.h"

namespace kevin::server {

class LoopbackServer {
 public:
  // Serves `front_end` (borrowed; it outlives this) with `options`, on a port the system picks.
  // Errors: Server::create's.
  static Result<std::unique_ptr<LoopbackServer>> start(FrontEnd* front_end, ServerOptions options) {
    options.port = 0;
    KEVIN_ASSIGN_OR_RETURN(auto server, Server::create(front_end, std::move(options)));
    return std::unique_ptr<LoopbackServer>(new LoopbackServer(std::move(server)));
  }
  ~LoopbackServer() { (void)finish(); }

  uint16_t port() const { return server_->port(); }
  // Asks the server to shut down (Server::stop); returns at once.
  void stop() { server_->stop(); }
  // Stops the server if nobody did and waits for run() to return: its status.
  Status finish() {
    server_->stop();
    if (thread_.joinable()) thread_.join();
    return ran_;
  }

 private:
  explicit LoopbackServer(std::unique_ptr<Server> server) : server_(std::move(server)) {
    thread_ = std::thread([this] { ran_ = server_->run(/*handle_signals=*/false); });
  }

  std::unique_ptr<Server> server_;
  std::thread thread_;
  Status ran_;  // written by the thread, read once it is joined
};

}  // namespace kevin::server
