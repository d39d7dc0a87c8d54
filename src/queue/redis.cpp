// redis.cpp — hiredis calls (redisCommandArgv for binary-safe arguments) and the conversion of
// its replies; a broken context is freed and reopened by reconnect().
#include "queue/redis.h"

#include <hiredis/hiredis.h>

#include <charconv>

namespace kevin::queue {
namespace {

timeval to_timeval(std::chrono::milliseconds ms) {
  return {static_cast<time_t>(ms.count() / 1000),
          static_cast<suseconds_t>((ms.count() % 1000) * 1000)};
}

RedisReply convert(const redisReply* r) {
  RedisReply out;
  switch (r->type) {
    case REDIS_REPLY_INTEGER:
      out.kind = RedisReply::Kind::kInteger;
      out.integer = r->integer;
      break;
    case REDIS_REPLY_STRING:
      out.kind = RedisReply::Kind::kString;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_STATUS:
      out.kind = RedisReply::Kind::kStatus;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_ARRAY:
      out.kind = RedisReply::Kind::kArray;
      for (size_t i = 0; i < r->elements; ++i) out.elements.push_back(convert(r->element[i]));
      break;
    default:
      break;  // nil
  }
  return out;
}

}  // namespace

std::string RedisAddress::url() const {
  return "redis://" + host + ":" + std::to_string(port) + (prefix == "kevin" ? "" : "/" + prefix);
}

Result<RedisAddress> parse_redis_url(std::string_view url) {
  constexpr std::string_view kScheme = "redis://";
  if (url.substr(0, kScheme.size()) != kScheme)
    return invalid_argument("queue URL must start with redis://: " + std::string(url));
  std::string_view rest = url.substr(kScheme.size());
  RedisAddress a;
  if (const auto slash = rest.find('/'); slash != std::string_view::npos) {
    a.prefix = std::string(rest.substr(slash + 1));
    rest = rest.substr(0, slash);
    if (a.prefix.empty() || a.prefix.find_first_of(" :{}") != std::string::npos) {
      return invalid_argument("queue URL prefix must be a plain name: " + std::string(url));
    }
  }
  if (const auto at = rest.rfind('@'); at != std::string_view::npos) {
    std::string_view auth = rest.substr(0, at);
    if (!auth.empty() && auth[0] == ':') auth.remove_prefix(1);
    a.password = std::string(auth);
    rest = rest.substr(at + 1);
  }
  if (const auto colon = rest.rfind(':'); colon != std::string_view::npos) {
    const std::string_view port = rest.substr(colon + 1);
    int value = 0;
    const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc() || end != port.data() + port.size() || value <= 0 || value > 65535) {
      return invalid_argument("queue URL has a bad port: " + std::string(url));
    }
    a.port = value;
    rest = rest.substr(0, colon);
  }
  if (rest.empty()) return invalid_argument("queue URL has no host: " + std::string(url));
  a.host = std::string(rest);
  return a;
}

Result<std::unique_ptr<RedisConnection>> RedisConnection::connect(
    const RedisAddress& address, std::chrono::milliseconds timeout) {
  std::unique_ptr<RedisConnection> c(new RedisConnection(address, timeout));
  KEVIN_RETURN_IF_ERROR(c->open());
  return c;
}

RedisConnection::~RedisConnection() {
  if (context_) redisFree(context_);
}

Status RedisConnection::open() {
  if (context_) {
    redisFree(context_);
    context_ = nullptr;
  }
  context_ = redisConnectWithTimeout(address_.host.c_str(), address_.port, to_timeval(timeout_));
  if (!context_ || context_->err) {
    const std::string why = context_ ? context_->errstr : "out of memory";
    if (context_) redisFree(context_);
    context_ = nullptr;
    return unavailable("cannot reach Redis at " + address_.url() + ": " + why);
  }
  if (!address_.password.empty()) {
    auto auth = command({"AUTH", address_.password});
    if (!auth.is_ok()) return auth.status();
  }
  return Status::ok();
}

Status RedisConnection::reconnect() { return open(); }

Result<RedisReply> RedisConnection::command(const std::vector<std::string>& args,
                                            std::chrono::milliseconds read_timeout) {
  if (!context_) return unavailable("not connected to Redis at " + address_.url());
  redisSetTimeout(context_, to_timeval(read_timeout));
  std::vector<const char*> argv;
  std::vector<size_t> lengths;
  for (const auto& a : args) {
    argv.push_back(a.data());
    lengths.push_back(a.size());
  }
  auto* reply = static_cast<redisReply*>(
      redisCommandArgv(context_, static_cast<int>(args.size()), argv.data(), lengths.data()));
  if (!reply) {
    const std::string why = context_->errstr;
    redisFree(context_);
    context_ = nullptr;
    return unavailable("Redis at " + address_.url() + ": " + why);
  }
  if (reply->type == REDIS_REPLY_ERROR) {
    const std::string message(reply->str, reply->len);
    freeReplyObject(reply);
    return internal_error("Redis: " + message + " (" + args[0] + ")");
  }
  RedisReply out = convert(reply);
  freeReplyObject(reply);
  return out;
}

Result<std::vector<std::string>> scan_keys(RedisConnection& c, const std::string& pattern) {
  std::vector<std::string> keys;
  std::string cursor = "0";
  do {
    KEVIN_ASSIGN_OR_RETURN(RedisReply page,
                           c.command({"SCAN", cursor, "MATCH", pattern, "COUNT", "500"}));
    if (page.elements.size() != 2) return internal_error("SCAN answered without [cursor, keys]");
    cursor = page.elements[0].str;
    for (const RedisReply& key : page.elements[1].elements) keys.push_back(key.str);
  } while (cursor != "0");
  return keys;
}

}  // namespace kevin::queue
