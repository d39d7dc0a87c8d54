// build_budget.h — what one build may spend, all its compiler processes together: how many run
// at once, the address space they hold together and the CPU time they use together. The compile
// driver (compiler.h) runs every batch of a build's compiler jobs through one BuildBudget, so an
// answer with many units queues instead of fanning out, whatever its number of extensions.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "core/mutex.h"
#include "sys/process.h"

namespace kevin::engine {

struct BuildLimits {
  // The most compiler processes of the build running at once (0 counts as 1). A job counts the
  // processes it runs at the same time (nvcc -t 2: two); a job wider than this runs alone.
  size_t max_processes = 2;
  // The address space of the build's processes running at once, together: each process gets a
  // share of what running jobs do not hold as its RLIMIT_AS, so the shares never sum past it.
  uint64_t memory_bytes = uint64_t{8} << 30;
  // The CPU time of all the build's processes together, and the most one process may use.
  std::chrono::seconds cpu{360};
  std::chrono::seconds process_cpu{180};
};

// One job's share of the build's limits: the rlimits of each of its processes.
struct Grant {
  uint64_t address_space_bytes = 0;  // RLIMIT_AS
  uint64_t cpu_seconds = 0;          // RLIMIT_CPU
};

// What a job reports when it is done.
struct JobUsage {
  std::chrono::microseconds cpu{0};  // the CPU time of its processes, all of them
  bool hit_limit = false;            // it ended on a limit: nothing more of the build starts
};

// How a job of a batch went on the budget's side.
struct Admission {
  bool ran = false;
  Grant grant;  // when it ran
  // Not run because the CPU time was spent; not run otherwise: an earlier job hit a limit.
  bool cpu_spent = false;
};

// One build's budget, shared by its batches of jobs (a batch runs when the previous one is done:
// units, retries, partial links, the link). Thread-safe; run() is not called concurrently.
class BuildBudget {
 public:
  // `deadline`: the build's wall-clock end, for its jobs to wait on.
  BuildBudget(BuildLimits limits, sys::Deadline deadline);
  BuildBudget(const BuildBudget&) = delete;
  BuildBudget& operator=(const BuildBudget&) = delete;

  // Calls job(i, grant) for each job of a batch, in order, each once the build's limits allow
  // (`processes[i]`: the processes job i runs at once), on worker threads, and returns how each
  // went. A job is admitted when it is the next one and the processes already running plus its
  // own fit max_processes (or none runs), with its processes' share: of the memory, what running
  // jobs do not hold divided among the processes that may run beside it, this batch's left
  // included; of the CPU time, what finished jobs did not use and running ones do not hold,
  // divided alike and at most process_cpu (a second, the least an rlimit can say, while there is
  // one for each of its processes). A job that cannot have a second waits for running jobs to
  // give back what they did not use, and is not run when none runs. Once a job reports a limit,
  // no later job of the build runs. `job` must not throw.
  std::vector<Admission> run(const std::vector<size_t>& processes,
                             const std::function<JobUsage(size_t job, const Grant&)>& job)
      EXCLUDES(mu_);

  sys::Deadline deadline() const { return deadline_; }
  // The CPU time the finished jobs used, together.
  std::chrono::microseconds cpu_used() const EXCLUDES(mu_);

 private:
  // Blocks until job `index` (`processes` wide) may start or never will.
  Admission admit(size_t index, size_t processes) EXCLUDES(mu_);
  void release(size_t processes, const Grant& grant, const JobUsage& usage) EXCLUDES(mu_);
  // Job `processes` wide's share of what is free now: its admission if it may start now, else
  // nullopt.
  std::optional<Admission> share(size_t processes) const REQUIRES(mu_);

  const BuildLimits limits_;
  const sys::Deadline deadline_;
  mutable Mutex mu_;
  CondVar changed_;
  size_t running_ GUARDED_BY(mu_) = 0;        // processes of admitted jobs not yet done
  uint64_t held_memory_ GUARDED_BY(mu_) = 0;  // their address-space shares, together
  std::chrono::microseconds held_cpu_ GUARDED_BY(mu_){0};  // their CPU shares, together
  std::chrono::microseconds used_cpu_ GUARDED_BY(mu_){0};  // what finished jobs used
  bool stopped_ GUARDED_BY(mu_) = false;                   // a job hit a limit
  // The batch in progress: the next job to admit and the processes of jobs not yet admitted.
  size_t next_ GUARDED_BY(mu_) = 0;
  size_t waiting_processes_ GUARDED_BY(mu_) = 0;
};

}  // namespace kevin::engine
