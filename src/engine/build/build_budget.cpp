// build_budget.cpp — admission of a build's compiler jobs in order, their shares of the build's
// memory and CPU time, and the accounting of what finished jobs used.
#include "engine/build/build_budget.h"

#include <algorithm>
#include <numeric>

#include "core/parallel.h"

namespace kevin::engine {
namespace {

constexpr std::chrono::seconds kSecond{1};

// A count of processes as a factor of durations.
int64_t width(size_t processes) { return static_cast<int64_t>(processes); }

std::chrono::seconds seconds_of(const Grant& grant) {
  return std::chrono::seconds(static_cast<int64_t>(grant.cpu_seconds));
}

}  // namespace

BuildBudget::BuildBudget(BuildLimits limits, sys::Deadline deadline)
    : limits_(limits), deadline_(deadline) {}

std::vector<Admission> BuildBudget::run(
    const std::vector<size_t>& processes,
    const std::function<JobUsage(size_t job, const Grant&)>& job) {
  std::vector<size_t> widths;
  for (const size_t p : processes) widths.push_back(std::max<size_t>(p, 1));
  {
    MutexLock lock(mu_);
    next_ = 0;
    waiting_processes_ = std::accumulate(widths.begin(), widths.end(), size_t{0});
  }
  std::vector<Admission> admissions(widths.size());
  // Workers take jobs in order; admit() keeps them in order when they wait.
  for_each_index(widths.size(), std::max<size_t>(limits_.max_processes, 1), [&](size_t i) {
    admissions[i] = admit(i, widths[i]);
    if (admissions[i].ran) release(widths[i], admissions[i].grant, job(i, admissions[i].grant));
  });
  return admissions;
}

std::chrono::microseconds BuildBudget::cpu_used() const {
  MutexLock lock(mu_);
  return used_cpu_;
}

std::optional<Admission> BuildBudget::share(size_t processes) const {
  const size_t most = std::max<size_t>(limits_.max_processes, 1);
  if (running_ > 0 && running_ + processes > most) return std::nullopt;
  // Divided among the processes that may run beside this job's: its own at least, and no more
  // than there is room for or this batch still has to start.
  const size_t free = running_ >= most ? 0 : most - running_;
  const size_t sharers = std::max(processes, std::min(free, waiting_processes_));
  const auto free_cpu = std::chrono::microseconds(limits_.cpu) - used_cpu_ - held_cpu_;
  auto cpu = std::min(std::chrono::duration_cast<std::chrono::seconds>(free_cpu / width(sharers)),
                      limits_.process_cpu);
  // A second is the least RLIMIT_CPU can say: the job takes one while there is one for each of
  // its processes, and leaves the sharing to those after it.
  if (cpu < kSecond && free_cpu >= kSecond * width(processes)) cpu = kSecond;
  if (cpu < kSecond) {
    // Running jobs give back what they do not use; with none running, nothing will come back.
    if (running_ > 0) return std::nullopt;
    Admission spent;
    spent.cpu_spent = true;
    return spent;
  }
  Admission admitted;
  admitted.ran = true;
  admitted.grant.address_space_bytes = (limits_.memory_bytes - held_memory_) / sharers;
  admitted.grant.cpu_seconds = static_cast<uint64_t>(cpu.count());
  return admitted;
}

Admission BuildBudget::admit(size_t index, size_t processes) {
  MutexLock lock(mu_);
  for (;;) {
    std::optional<Admission> admission;
    if (next_ == index) admission = stopped_ ? Admission{} : share(processes);
    if (admission) {
      ++next_;
      waiting_processes_ -= processes;
      if (admission->ran) {
        running_ += processes;
        held_memory_ += admission->grant.address_space_bytes * processes;
        held_cpu_ += seconds_of(admission->grant) * width(processes);
      }
      changed_.notify_all();
      return *admission;
    }
    changed_.wait(mu_);
  }
}

void BuildBudget::release(size_t processes, const Grant& grant, const JobUsage& usage) {
  MutexLock lock(mu_);
  running_ -= processes;
  held_memory_ -= grant.address_space_bytes * processes;
  held_cpu_ -= seconds_of(grant) * width(processes);
  used_cpu_ += usage.cpu;
  stopped_ = stopped_ || usage.hit_limit;
  changed_.notify_all();
}

}  // namespace kevin::engine
