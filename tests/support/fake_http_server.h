// fake_http_server.h — a tiny HTTP/1.1 server on 127.0.0.1 for tests of HTTP clients: each
// request gets the next scripted reply (status, body, delay, or a dropped connection) or the
// reply a handler computes from it, and
// every request is recorded for assertions. One thread per connection; stopped (and joined)
// on destruction.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "core/mutex.h"

namespace kevin::testing {

struct FakeReply {
  int status = 200;
  std::string body;
  int delay_ms = 0;   // wait before answering
  bool drop = false;  // close the connection without answering
};

struct RecordedRequest {
  std::string method, path, headers, body;
};

class FakeHttpServer {
 public:
  // Listens on an ephemeral loopback port. Replies are served in order; when the script is
  // exhausted the last reply repeats.
  explicit FakeHttpServer(std::vector<FakeReply> script);
  // Every request is answered by `handler` (called concurrently from connection threads).
  using Handler = std::function<FakeReply(const RecordedRequest&)>;
  explicit FakeHttpServer(Handler handler);
  ~FakeHttpServer();
  FakeHttpServer(const FakeHttpServer&) = delete;
  FakeHttpServer& operator=(const FakeHttpServer&) = delete;

  int port() const { return port_; }
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<RecordedRequest> requests() const;
  void push(FakeReply reply);

 private:
  void start();
  void accept_loop();
  void serve(int fd);
  FakeReply next_reply();

  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread acceptor_;
  Handler handler_;
  mutable Mutex mu_;
  std::deque<FakeReply> script_ GUARDED_BY(mu_);
  FakeReply last_ GUARDED_BY(mu_);
  std::vector<RecordedRequest> requests_ GUARDED_BY(mu_);
  std::vector<std::thread> workers_ GUARDED_BY(mu_);
};

}  // namespace kevin::testing
