// reference_worker.h — the C++ side of the Python reference worker: finds an interpreter
// that can import torch, starts reference_worker.py, and asks it to prepare reference data
// (correctness and timing sets with expected outputs) or to time the eager baseline of a
// task. Every request has a time limit, so a task that never returns cannot hang kevin.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "engine/run/reference.h"
#include "sys/fd.h"
#include "sys/process.h"

namespace kevin::tasks {

struct WorkerOptions {
  std::filesystem::path script;                // reference_worker.py
  std::optional<std::string> python_override;  // --python, else $KEVIN_PYTHON
  std::chrono::seconds start_timeout{180};
  // How long one request may run. Past it the worker is killed (the next request starts a
  // fresh one) and the request fails with kDeadlineExceeded naming the task and the limit:
  // a task whose get_inputs(), Model(...) or forward never returns must not hang kevin.
  std::chrono::seconds describe_timeout{120};
  std::chrono::seconds check_timeout{600};
  std::chrono::seconds prepare_timeout{600};
  std::chrono::seconds baseline_timeout{600};
  std::chrono::seconds peaks_timeout{300};
};

// The timing sets of a seed set fill about this many bytes (inputs and expected outputs), but
// there are at least kDefaultMinTimingSets of them: a task with very large sets gets a few
// timed calls on fresh data rather than many on data the candidate has already answered.
inline constexpr uint64_t kDefaultTimingBytesBudget = uint64_t{2} << 30;
inline constexpr int kDefaultMinTimingSets = 5;

// What prepare and baseline share: the task, where it runs, and its secret seeds.
struct TaskRequest {
  std::filesystem::path task;
  std::string backend;  // "cuda" or "cpu"
  int device = 0;
  std::vector<uint64_t> seeds;         // K correctness seeds (baseline: warm-up seeds)
  std::vector<uint64_t> timing_seeds;  // one per possible timing set (max_calls of them)
  // T = clamp(floor(timing_bytes_budget / bytes of one input set and its outputs),
  //           min_timing_sets, timing_seeds.size()).
  uint64_t timing_bytes_budget = kDefaultTimingBytesBudget;
  int min_timing_sets = kDefaultMinTimingSets;
  // Polled (every 100 ms) while the worker works: once it reads true the worker's process
  // group is killed (the next request starts a fresh worker) and the request fails with
  // kCancelled. Borrowed; null: the request runs to its end or its limit.
  const std::atomic<bool>* cancel = nullptr;
};

struct PrepareRequest : TaskRequest {
  std::filesystem::path out_dir;  // receives meta.json and the four data files
};

// The judge's protocol on PyTorch (eager, or torch.compile's code: `kind`): `warmup` calls
// (at least 3) on the correctness seeds, then one call per timing set, each set timed once:
// as many as budget_ms allows at the warm-up speed, at least min_calls, at most T. Every set
// is built on the device before the first timed call, and a compiled baseline is compiled
// (and run once, untimed) then too, so only the calls need the device alone.
struct BaselineRequest : TaskRequest {
  double budget_ms = 2000;
  int warmup = 3, min_calls = 10;
  engine::BaselineKind kind = engine::BaselineKind::kEager;
  // Called once the worker has built every set and waits to time them; the calls start when
  // it returns OK (the caller takes the device alone here). An error is the request's, and
  // the worker is stopped. Empty: the worker times as soon as its sets are built.
  std::function<Status()> sets_built;
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
  // The worker's process id (diagnostics, tests); -1 once stopped.
  pid_t pid() const { return child_.pid(); }
  const std::string& torch_version() const { return torch_version_; }
  // Name of CUDA device `ordinal` as PyTorch reports it ("cpu" for the CPU backend).
  std::string device_name(const std::string& backend, int ordinal) const;

  // Writes reference data (protocol 2: K correctness and T timing sets) into
  // request.out_dir and loads it; no baseline. A broken task file gives kInvalidArgument
  // with the task's error; a request past options.prepare_timeout kDeadlineExceeded; one
  // cancelled (request.cancel) kCancelled, leaving out_dir incomplete.
  Result<engine::ReferenceSet> prepare(const PrepareRequest& request);

  // Times the baseline of request.kind on sets built from request's seeds; writes nothing.
  // measured_at is left 0 (the caller stamps what it keeps). Errors as prepare, with
  // options.baseline_timeout; kFailedPrecondition for a compile baseline on a PyTorch without
  // torch.compile (before 2.0); kInvalidArgument when torch.compile fails on the task.
  Result<engine::TimingStats> baseline(const BaselineRequest& request);

  // The peak rates of `backend`'s device `device` (roofline.h: a copy's bandwidth, matrix
  // products per dtype), measured now; the caller keeps the device to itself meanwhile.
  // measured_at is left 0. Errors: kDeadlineExceeded past options.peaks_timeout, kInternal
  // for a failed measurement or a malformed reply.
  Result<engine::DevicePeaks> peaks(const std::string& backend, int device);

  // The task's ABI argument list at `backend`'s sizes (no data written): the worker's reply
  // with "inputs", "scalar_names", "scalars", "outputs", "family", "has_cpu_sizes".
  Result<Json> describe(const std::filesystem::path& task, const std::string& backend);

  // Degeneracy checks of a task on `backend` (docs/tasks.md): the list of flags raised,
  // empty when the task is sound.
  Result<std::vector<std::string>> check(const std::filesystem::path& task,
                                         const std::string& backend);

 private:
  // What the caller does when the worker, midway through a request, sends a line with
  // "interim" (it then waits): OK tells the worker to go on; an error ends the request.
  using Interim = std::function<Status(const Json& line)>;
  // One request and its reply; on any failure (`cancel` read true included) the worker is
  // killed, since a late reply would answer the next request. An interim line goes to
  // `interim` (without one it is a malformed reply); after it the reply has `limit` again.
  Result<Json> exchange(const Json& request, std::chrono::seconds limit,
                        const std::atomic<bool>* cancel = nullptr, const Interim& interim = {});
  // exchange() plus the worker's error conventions: task errors → kInvalidArgument, the limit
  // passed → kDeadlineExceeded naming the task, `cancel` → kCancelled naming it.
  Result<Json> call(const Json& request, const std::filesystem::path& task,
                    std::chrono::seconds limit, const std::atomic<bool>* cancel = nullptr,
                    const Interim& interim = {});

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
