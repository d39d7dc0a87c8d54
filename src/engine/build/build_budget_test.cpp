// build_budget_test.cpp — a build's budget with tiny numbers and no compilers: the order jobs
// start in, how many run at once, their memory and CPU shares (whose sum never passes the
// budget), a CPU budget spent, and a build stopped by a job that hit a limit.
#include "engine/build/build_budget.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

namespace kevin::engine {
namespace {
using namespace std::chrono_literals;

BuildLimits tiny(size_t processes, uint64_t memory, std::chrono::seconds cpu,
                 std::chrono::seconds process_cpu) {
  BuildLimits l;
  l.max_processes = processes;
  l.memory_bytes = memory;
  l.cpu = cpu;
  l.process_cpu = process_cpu;
  return l;
}

// What the jobs of a batch saw while they ran: the most processes and the most memory shares
// held at once, and the order they started in.
struct Observed {
  Mutex mu;
  CondVar changed;
  size_t processes GUARDED_BY(mu) = 0;
  uint64_t memory GUARDED_BY(mu) = 0;
  size_t most_processes GUARDED_BY(mu) = 0;
  uint64_t most_memory GUARDED_BY(mu) = 0;
  std::vector<size_t> started GUARDED_BY(mu);
  std::vector<size_t> alone GUARDED_BY(mu);  // jobs that started with no other running

  void enter(size_t job, size_t width, const Grant& grant) {
    MutexLock lock(mu);
    if (processes == 0) alone.push_back(job);
    processes += width;
    memory += grant.address_space_bytes * width;
    most_processes = std::max(most_processes, processes);
    most_memory = std::max(most_memory, memory);
    started.push_back(job);
    changed.notify_all();
  }
  void leave(size_t width, const Grant& grant) {
    MutexLock lock(mu);
    processes -= width;
    memory -= grant.address_space_bytes * width;
  }
  // Blocks until `n` processes run at once (or a second has passed).
  void await_processes(size_t n) {
    MutexLock lock(mu);
    const auto until = CondVar::Clock::now() + 1s;
    while (most_processes < n && changed.wait_until(mu, until)) {
    }
  }
};

TEST(BuildBudget, ALoneJobHasTheWholeBudget) {
  BuildBudget budget(tiny(4, 8000, 100s, 30s), sys::Deadline::never());
  const auto a = budget.run({1}, [](size_t, const Grant&) { return JobUsage{}; });
  ASSERT_TRUE(a[0].ran);
  EXPECT_EQ(a[0].grant.address_space_bytes, 8000u);
  EXPECT_EQ(a[0].grant.cpu_seconds, 30u) << "never more than one process may use";
}

TEST(BuildBudget, JobsRunningTogetherShareTheMemory) {
  BuildBudget budget(tiny(2, 8000, 100s, 100s), sys::Deadline::never());
  Observed seen;
  const auto a = budget.run({1, 1}, [&](size_t i, const Grant& g) {
    seen.enter(i, 1, g);
    seen.await_processes(2);  // both hold their shares at once
    seen.leave(1, g);
    return JobUsage{};
  });
  EXPECT_EQ(a[0].grant.address_space_bytes, 4000u);
  EXPECT_EQ(a[1].grant.address_space_bytes, 4000u);
  EXPECT_EQ(a[0].grant.cpu_seconds, 50u);
  EXPECT_EQ(a[1].grant.cpu_seconds, 50u);
}

TEST(BuildBudget, NeverMoreProcessesThanAllowedNorMoreMemoryThanTheBudget) {
  BuildBudget budget(tiny(3, 9000, 1000s, 100s), sys::Deadline::never());
  const std::vector<size_t> widths = {1, 2, 1, 1, 2, 1, 1, 1, 3, 1, 2, 1};
  Observed seen;
  const auto a = budget.run(widths, [&](size_t i, const Grant& g) {
    seen.enter(i, widths[i], g);
    std::this_thread::sleep_for(3ms);
    seen.leave(widths[i], g);
    return JobUsage{};
  });
  MutexLock lock(seen.mu);
  EXPECT_LE(seen.most_processes, 3u);
  EXPECT_GE(seen.most_processes, 2u) << "jobs that fit still run together";
  EXPECT_LE(seen.most_memory, 9000u);
  for (const auto& admission : a) EXPECT_TRUE(admission.ran);
}

TEST(BuildBudget, JobsStartInOrderSoAWideOneIsNotOvertaken) {
  // The third job would fit beside the first, but the second, two processes wide, is before it.
  BuildBudget budget(tiny(2, 8000, 100s, 100s), sys::Deadline::never());
  const std::vector<size_t> widths = {1, 2, 1};
  Observed seen;
  budget.run(widths, [&](size_t i, const Grant& g) {
    seen.enter(i, widths[i], g);
    std::this_thread::sleep_for(20ms);
    seen.leave(widths[i], g);
    return JobUsage{};
  });
  MutexLock lock(seen.mu);
  EXPECT_EQ(seen.started, (std::vector<size_t>{0, 1, 2}));
  EXPECT_EQ(seen.alone, (std::vector<size_t>{0, 1, 2}));
}

TEST(BuildBudget, AJobWiderThanTheLimitRunsAloneWithTheBudgetDividedAmongItsProcesses) {
  BuildBudget budget(tiny(1, 8000, 100s, 100s), sys::Deadline::never());
  const auto a = budget.run({2}, [](size_t, const Grant&) { return JobUsage{}; });
  ASSERT_TRUE(a[0].ran);
  EXPECT_EQ(a[0].grant.address_space_bytes, 4000u);
  EXPECT_EQ(a[0].grant.cpu_seconds, 50u);
}

TEST(BuildBudget, FinishedJobsSpendTheCpuTimeUntilNoneIsLeft) {
  BuildBudget budget(tiny(1, 8000, 10s, 4s), sys::Deadline::never());
  const auto a = budget.run({1, 1, 1, 1, 1}, [](size_t, const Grant&) {
    return JobUsage{3s, false};
  });
  std::vector<uint64_t> granted;
  for (size_t i = 0; i < 4; ++i) {
    ASSERT_TRUE(a[i].ran) << i;
    granted.push_back(a[i].grant.cpu_seconds);
  }
  // 10 s: 4, 4 (7 left), 4 (4 left), then the one second left, then nothing.
  EXPECT_EQ(granted, (std::vector<uint64_t>{4, 4, 4, 1}));
  EXPECT_FALSE(a[4].ran);
  EXPECT_TRUE(a[4].cpu_spent);
  EXPECT_EQ(budget.cpu_used(), 12s);
}

TEST(BuildBudget, AJobWaitsForRunningJobsToGiveBackCpuTimeBeforeItIsRefused) {
  // Two seconds for three jobs: the first two hold a second each, and the third runs on what
  // they did not use, after both.
  BuildBudget budget(tiny(2, 8000, 2s, 2s), sys::Deadline::never());
  Observed seen;
  const auto a = budget.run({1, 1, 1}, [&](size_t i, const Grant& g) {
    seen.enter(i, 1, g);
    std::this_thread::sleep_for(5ms);
    seen.leave(1, g);
    return JobUsage{200ms, false};
  });
  for (const auto& admission : a) {
    ASSERT_TRUE(admission.ran);
    EXPECT_EQ(admission.grant.cpu_seconds, 1u);
  }
  MutexLock lock(seen.mu);
  EXPECT_NE(std::find(seen.alone.begin(), seen.alone.end(), 2u), seen.alone.end());
}

TEST(BuildBudget, AJobThatHitALimitStopsTheBuild) {
  BuildBudget budget(tiny(1, 8000, 100s, 100s), sys::Deadline::never());
  const auto a = budget.run({1, 1, 1}, [](size_t i, const Grant&) { return JobUsage{1s, i == 1}; });
  EXPECT_TRUE(a[0].ran);
  EXPECT_TRUE(a[1].ran);
  EXPECT_FALSE(a[2].ran);
  EXPECT_FALSE(a[2].cpu_spent);
  // And the next batch of the build (a retry, the link) does not start either.
  const auto later = budget.run({1}, [](size_t, const Grant&) { return JobUsage{}; });
  EXPECT_FALSE(later[0].ran);
}

}  // namespace
}  // namespace kevin::engine
