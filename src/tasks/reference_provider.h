// reference_provider.h — reference data on demand, cached on disk. A seed set (K secret
// seeds, drawn from the OS's random source and never stored) is prepared once per (task
// content, backend, device, K) and reused until it is older than the seed TTL; the eager
// baseline is cached by (task content hash, device name, torch version, protocol version).
// Thread-safe; the Python worker is started lazily, once.
#pragma once

#include <chrono>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>

#include "engine/reference.h"
#include "tasks/reference_worker.h"

namespace kevin::tasks {

struct ProviderOptions {
  std::filesystem::path cache_dir;           // uses <cache_dir>/reference and /baseline
  WorkerOptions worker;
  int num_sets = 5;                          // K
  std::chrono::seconds seed_ttl{3600};       // 0: a fresh seed set every time
  double timing_budget_ms = 2000;
  int warmup = 3, min_calls = 10, max_calls = 100;
};

class ReferenceProvider {
 public:
  explicit ReferenceProvider(ProviderOptions options) : options_(std::move(options)) {}

  // Reference data for `task` on `backend` ("cuda"/"cpu") and CUDA device `device`.
  // Errors: kNotFound (task file), kInvalidArgument (the task is broken),
  // kFailedPrecondition (no interpreter with torch).
  Result<engine::ReferenceSet> get(const std::filesystem::path& task, const std::string& backend, int device);

  // The task's ABI argument list at `backend`'s sizes (ReferenceWorker::describe), through
  // the same worker process. Errors as get().
  Result<Json> describe(const std::filesystem::path& task, const std::string& backend);

  // The interpreter in use, once the worker has started ("" before).
  std::string python() const;

 private:
  Result<ReferenceWorker*> worker();

  ProviderOptions options_;
  mutable std::mutex mu_;
  std::optional<ReferenceWorker> worker_;
};

}  // namespace kevin::tasks
