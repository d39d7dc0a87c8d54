// redis.h — a Redis connection over hiredis with errors as values: URL parsing, commands as
// argument vectors (binary-safe), replies as a plain tree, and reconnection. One connection
// per thread: hiredis contexts are not thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

struct redisContext;

namespace kevin::queue {

// redis://[:PASSWORD@]HOST[:PORT][/PREFIX]; the prefix names every key kevin uses (default
// "kevin"), so several deployments can share one Redis.
struct RedisAddress {
  std::string host = "127.0.0.1";
  int port = 6379;
  std::string password;
  std::string prefix = "kevin";
  std::string url() const;  // without the password
};
// kInvalidArgument for anything that is not such a URL.
Result<RedisAddress> parse_redis_url(std::string_view url);

struct RedisReply {
  enum class Kind { kNil, kInteger, kString, kArray, kStatus };
  Kind kind = Kind::kNil;
  int64_t integer = 0;
  std::string str;                   // kString and kStatus
  std::vector<RedisReply> elements;  // kArray
  bool is_nil() const { return kind == Kind::kNil; }
};

class RedisConnection {
 public:
  // Connects (and AUTHs). kUnavailable when Redis cannot be reached within `timeout`.
  static Result<std::unique_ptr<RedisConnection>> connect(
      const RedisAddress& address, std::chrono::milliseconds timeout = std::chrono::seconds(5));
  ~RedisConnection();
  RedisConnection(const RedisConnection&) = delete;
  RedisConnection& operator=(const RedisConnection&) = delete;

  // Runs one command. kUnavailable when the connection broke (call reconnect()), kInternal
  // carrying Redis's message when Redis answered with an error. `read_timeout` bounds the wait
  // for the reply (give blocking commands more than their BLOCK time).
  Result<RedisReply> command(const std::vector<std::string>& args,
                             std::chrono::milliseconds read_timeout = std::chrono::seconds(10));
  // Drops the connection and connects again (once). kUnavailable if Redis is still away.
  Status reconnect();
  const RedisAddress& address() const { return address_; }

 private:
  RedisConnection(RedisAddress address, std::chrono::milliseconds timeout)
      : address_(std::move(address)), timeout_(timeout) {}
  Status open();

  RedisAddress address_;
  std::chrono::milliseconds timeout_;
  redisContext* context_ = nullptr;
};

// Every key matching `pattern`, by SCAN (KEYS would block a busy shared Redis). Errors of
// the connection as command() returns them.
Result<std::vector<std::string>> scan_keys(RedisConnection& c, const std::string& pattern);

}  // namespace kevin::queue
