// fake_http_server.cpp — sockets, a minimal request reader (headers + Content-Length body)
// and scripted replies.
#include "core/mutex.h"
#include "fake_http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

namespace kevin::testing {

FakeHttpServer::FakeHttpServer(std::vector<FakeReply> script)
    : script_(script.begin(), script.end()) {
  start();
}

FakeHttpServer::FakeHttpServer(Handler handler) : handler_(std::move(handler)) { start(); }

void FakeHttpServer::start() {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  ::listen(listen_fd_, 64);
  socklen_t len = sizeof addr;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] { accept_loop(); });
}

FakeHttpServer::~FakeHttpServer() {
  stopping_ = true;
  ::shutdown(listen_fd_, SHUT_RDWR);
  acceptor_.join();
  ::close(listen_fd_);
  for (auto& w : workers_) w.join();
}

std::vector<RecordedRequest> FakeHttpServer::requests() const {
  MutexLock lock(mu_);
  return requests_;
}

void FakeHttpServer::push(FakeReply reply) {
  MutexLock lock(mu_);
  script_.push_back(std::move(reply));
}

FakeReply FakeHttpServer::next_reply() {
  MutexLock lock(mu_);
  if (!script_.empty()) {
    last_ = script_.front();
    script_.pop_front();
  }
  return last_;
}

void FakeHttpServer::accept_loop() {
  while (!stopping_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    MutexLock lock(mu_);
    workers_.emplace_back([this, fd] { serve(fd); });
  }
}

void FakeHttpServer::serve(int fd) {
  // Keep-alive: answer requests on this connection until the client closes it.
  std::string buf;
  char chunk[8192];
  while (!stopping_) {
    size_t header_end;
    while ((header_end = buf.find("\r\n\r\n")) == std::string::npos) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) {
        if (stopping_) break;
        continue;
      }
      const ssize_t n = ::read(fd, chunk, sizeof chunk);
      if (n <= 0) {
        ::close(fd);
        return;
      }
      buf.append(chunk, static_cast<size_t>(n));
    }
    if (stopping_) break;
    RecordedRequest req;
    req.headers = buf.substr(0, header_end);
    const size_t sp1 = req.headers.find(' '), sp2 = req.headers.find(' ', sp1 + 1);
    req.method = req.headers.substr(0, sp1);
    req.path = req.headers.substr(sp1 + 1, sp2 - sp1 - 1);
    size_t length = 0;
    for (const char* key : {"Content-Length:", "content-length:"}) {
      const size_t at = req.headers.find(key);
      if (at != std::string::npos) length = std::stoul(req.headers.substr(at + std::strlen(key)));
    }
    while (buf.size() < header_end + 4 + length) {
      const ssize_t n = ::read(fd, chunk, sizeof chunk);
      if (n <= 0) break;
      buf.append(chunk, static_cast<size_t>(n));
    }
    req.body = buf.substr(header_end + 4, length);
    buf.erase(0, header_end + 4 + length);
    {
      MutexLock lock(mu_);
      requests_.push_back(req);
    }
    const FakeReply reply = handler_ ? handler_(req) : next_reply();
    if (reply.delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(reply.delay_ms));
    if (reply.drop) break;
    const std::string response = "HTTP/1.1 " + std::to_string(reply.status) +
                                 " X\r\nContent-Type: application/json\r\n"
                                 "Content-Length: " +
                                 std::to_string(reply.body.size()) + "\r\n\r\n" + reply.body;
    if (::write(fd, response.data(), response.size()) < 0) break;
  }
  ::close(fd);
}

}  // namespace kevin::testing
