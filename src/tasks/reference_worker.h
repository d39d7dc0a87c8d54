// reference_worker.h — the C++ side of the Python reference worker: finds an interpreter
// that can import torch, starts reference_worker.py, and asks it to prepare reference data
// (input sets, expected outputs, eager baseline) for a task.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "engine/reference.h"
#include "sys/fd.h"
#include "sys/process.h"

namespace kevin::tasks {

struct WorkerOptions {
  std::filesystem::path script;                // reference_worker.py
  std::optional<std::string> python_override;  // --python, else $KEVIN_PYTHON
  std::chrono::seconds start_timeout{180};
  std::chrono::seconds prepare_timeout{1800};
};

struct PrepareRequest {
  std::filesystem::path task;
  std::string backend;  // "cuda" or "cpu"
  int device = 0;
  std::vector<uint64_t> seeds;
  std::filesystem::path out_dir;
  bool baseline = true;
  double timing_budget_ms = 2000;
  int warmup = 3, min_calls = 10, max_calls = 100;
};

// A running worker. Not thread-safe: one request at a time.
class ReferenceWorker {
 public:
  // Tries the override, then $KEVIN_PYTHON, then python3/python on PATH and /usr/bin/python3,
  // keeping the first whose worker starts (imports torch). kFailedPrecondition, listing what
  // was tried and why each failed, when none works.
  static Result<ReferenceWorker> start(const WorkerOptions& options);

  const std::string& python() const { return python_; }
  // False once the worker has exited or was stopped after a failed exchange.
  bool alive() const { return child_.running(); }
  const std::string& torch_version() const { return torch_version_; }
  // Name of CUDA device `ordinal` as PyTorch reports it ("cpu" for the CPU backend).
  std::string device_name(const std::string& backend, int ordinal) const;

  // Writes reference data into request.out_dir and loads it. A broken task file gives
  // kInvalidArgument with the task's error.
  Result<engine::ReferenceSet> prepare(const PrepareRequest& request);

  // The task's ABI argument list at `backend`'s sizes (no data written): the worker's reply
  // with "inputs", "scalar_names", "scalars", "outputs", "family", "has_cpu_sizes".
  Result<Json> describe(const std::filesystem::path& task, const std::string& backend);

  // Degeneracy checks of a task on `backend` (docs/tasks.md): the list of flags raised,
  // empty when the task is sound.
  Result<std::vector<std::string>> check(const std::filesystem::path& task, const std::string& backend);

 private:
  Result<Json> exchange(const Json& request, sys::Deadline deadline);
  // exchange() plus the worker's error conventions: task errors → kInvalidArgument.
  Result<Json> call(const Json& request, const std::filesystem::path& task);

  WorkerOptions options_;
  std::string python_, torch_version_;
  std::vector<std::string> cuda_devices_;
  sys::Child child_;
  sys::Fd to_worker_, from_worker_;
  std::string pending_;  // bytes read past the last reply line
};

// Interpreters worth trying, in order, without duplicates.
std::vector<std::string> python_candidates(const std::optional<std::string>& override_path);

}  // namespace kevin::tasks
