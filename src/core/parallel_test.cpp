// parallel_test.cpp — run_workers, for_each_index and parallel_chunks: every worker and index
// exactly once, work really concurrent, slices that tile the range. Also run under TSan.
#include "core/parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <thread>
#include <vector>

#include "core/mutex.h"

namespace kevin {
namespace {

TEST(RunWorkers, CallsEveryWorkerOnceAndTheCallerIsWorkerZero) {
  Mutex mu;
  std::vector<size_t> seen;
  std::thread::id worker_zero;
  run_workers(5, [&](size_t w) {
    MutexLock lock(mu);
    seen.push_back(w);
    if (w == 0) worker_zero = std::this_thread::get_id();
  });
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<size_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(worker_zero, std::this_thread::get_id());
}

TEST(RunWorkers, ZeroWorkersCallNothing) {
  bool called = false;
  run_workers(0, [&](size_t) { called = true; });
  EXPECT_FALSE(called);
}

TEST(RunWorkers, WorkersRunAtTheSameTime) {
  // Each worker waits for all the others to arrive: this finishes only if they are concurrent.
  constexpr size_t kWorkers = 4;
  Mutex mu;
  CondVar all_here;
  size_t arrived = 0;
  run_workers(kWorkers, [&](size_t) {
    MutexLock lock(mu);
    ++arrived;
    all_here.notify_all();
    const auto deadline = CondVar::Clock::now() + std::chrono::seconds(20);
    while (arrived < kWorkers && all_here.wait_until(mu, deadline)) {
    }
  });
  EXPECT_EQ(arrived, kWorkers);
}

TEST(ForEachIndex, EveryIndexExactlyOnceWhateverTheWidth) {
  for (size_t width : {size_t{0}, size_t{1}, size_t{3}, size_t{64}}) {
    std::vector<std::atomic<int>> calls(100);
    for_each_index(calls.size(), width, [&](size_t i) { calls[i]++; });
    for (size_t i = 0; i < calls.size(); ++i) EXPECT_EQ(calls[i].load(), 1) << i << " " << width;
  }
}

TEST(ForEachIndex, NoMoreWorkersThanWidthOrItems) {
  Mutex mu;
  std::set<std::thread::id> threads;
  for_each_index(50, 3, [&](size_t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    MutexLock lock(mu);
    threads.insert(std::this_thread::get_id());
  });
  EXPECT_LE(threads.size(), 3u);
  threads.clear();
  for_each_index(2, 16, [&](size_t) {
    MutexLock lock(mu);
    threads.insert(std::this_thread::get_id());
  });
  EXPECT_LE(threads.size(), 2u);
}

TEST(ForEachIndex, NothingToDoCallsNothing) {
  bool called = false;
  for_each_index(0, 8, [&](size_t) { called = true; });
  EXPECT_FALSE(called);
}

TEST(ParallelChunks, SlicesTileTheRangeInOrder) {
  for (uint64_t count : {uint64_t{0}, uint64_t{7}, (uint64_t{1} << 20) * 5 + 3}) {
    std::vector<std::pair<uint64_t, uint64_t>> slices(chunk_parts(count));
    const size_t parts = parallel_chunks(count, [&](uint64_t begin, uint64_t end, size_t part) {
      slices[part] = {begin, end};
    });
    ASSERT_EQ(parts, slices.size());
    uint64_t expected_begin = 0;
    for (const auto& [begin, end] : slices) {
      EXPECT_EQ(begin, expected_begin);
      EXPECT_LE(begin, end);
      expected_begin = end;
    }
    EXPECT_EQ(expected_begin, count);
  }
}

TEST(ParallelChunks, SmallCountsAreOnePartAndLargeOnesUseTheMachine) {
  EXPECT_EQ(chunk_parts(1000), 1u);
  EXPECT_EQ(chunk_parts(uint64_t{1} << 40), hardware_threads());
}

}  // namespace
}  // namespace kevin
