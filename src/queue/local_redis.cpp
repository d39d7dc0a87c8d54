// local_redis.cpp — redis-server spawned on loopback, retried on other ports when the chosen
// one is taken (the child exits at once); sys::Child kills it on destruction.
#include "queue/local_redis.h"

#include <fcntl.h>
#include <unistd.h>

#include <random>
#include <thread>

namespace kevin::queue {

Result<std::unique_ptr<LocalRedis>> LocalRedis::start(const std::string& binary,
                                                      const std::string& prefix) {
  const std::optional<std::filesystem::path> path =
      binary.find('/') != std::string::npos ? std::optional<std::filesystem::path>(binary)
                                            : sys::find_program(binary);
  if (!path || ::access(path->c_str(), X_OK) != 0) {
    return not_found(binary + " is not installed (Debian: apt-get install redis-server)");
  }
  std::unique_ptr<LocalRedis> redis(new LocalRedis());
  KEVIN_ASSIGN_OR_RETURN(redis->dir_, sys::TempDir::create("kevin-redis-"));
  redis->address_.host = "127.0.0.1";
  redis->address_.prefix = prefix;
  std::mt19937 rng{std::random_device{}()};
  for (int attempt = 0; attempt < 20; ++attempt) {
    redis->address_.port = 20000 + static_cast<int>(rng() % 30000);
    if (redis->try_port(*path)) return redis;
  }
  return unavailable("redis-server did not start on any of 20 loopback ports");
}

bool LocalRedis::try_port(const std::filesystem::path& binary) {
  const int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  sys::SpawnOptions o;
  o.argv = {binary.string(),
            "--port",
            std::to_string(address_.port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--loglevel",
            "warning",
            "--dir",
            dir_.path().string()};
  o.env = sys::current_environment();
  if (null >= 0) o.fds = {{STDOUT_FILENO, null}};
  auto child = sys::spawn(o);
  if (null >= 0) ::close(null);
  if (!child.is_ok()) return false;
  for (int i = 0; i < 100; ++i) {
    if (RedisConnection::connect(address_, std::chrono::milliseconds(200)).is_ok()) {
      server_ = std::move(child).value();
      return true;
    }
    // A taken port makes the server exit at once: try another.
    if (child->wait(sys::Deadline::after(std::chrono::milliseconds(50))).is_ok()) return false;
  }
  return false;  // child's destructor kills the silent server
}

}  // namespace kevin::queue
