// local_redis.h — a throwaway redis-server child on a free loopback port, no persistence, for
// tests and benchmarks of the queue (never for a deployment: docs/distributed.md runs Redis
// as a service with AOF). The server is killed and its folder removed on destruction.
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "queue/redis.h"
#include "sys/process.h"
#include "sys/tempdir.h"

namespace kevin::queue {

class LocalRedis {
 public:
  // Starts `binary` (a path, or a name looked up in PATH) bound to 127.0.0.1 and waits until it
  // answers. kNotFound when the binary is missing, kUnavailable when it did not come up on any
  // of the ports tried. Keys of the returned address live under `prefix`.
  static Result<std::unique_ptr<LocalRedis>> start(const std::string& binary = "redis-server",
                                                   const std::string& prefix = "test");
  LocalRedis(const LocalRedis&) = delete;
  LocalRedis& operator=(const LocalRedis&) = delete;

  const RedisAddress& address() const { return address_; }

 private:
  LocalRedis() = default;
  // Spawns the server on address_.port; true once it answers a connection.
  bool try_port(const std::filesystem::path& binary);

  sys::TempDir dir_;
  RedisAddress address_;
  sys::Child server_;  // killed with its process group when destroyed
};

}  // namespace kevin::queue
