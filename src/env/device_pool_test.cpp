// device_pool_test.cpp — lanes fill evenly, the in-flight limit blocks, releases wake waiters.
#include "env/device_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace kevin::env {
namespace {

TEST(DevicePoolTest, SpreadsEvaluationsOverLanes) {
  DevicePool pool(3, 6);
  std::vector<size_t> lanes;
  for (int i = 0; i < 6; ++i) lanes.push_back(pool.acquire());
  EXPECT_EQ(lanes, (std::vector<size_t>{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(pool.running(), (std::vector<int>{2, 2, 2}));
  pool.release(1);
  pool.release(1);
  EXPECT_EQ(pool.acquire(), 1u);  // the least-loaded lane, not the next in turn
  EXPECT_EQ(pool.in_flight(), 5);
}

TEST(DevicePoolTest, LimitBlocksUntilARelease) {
  DevicePool pool(2, 2);
  const size_t a = pool.acquire();
  pool.acquire();
  std::atomic<bool> got{false};
  std::atomic<size_t> lane{99};
  std::thread waiter([&] {
    lane = pool.acquire();
    got = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(got.load()) << "a third evaluation started past the limit of two";
  pool.release(a);
  waiter.join();
  EXPECT_TRUE(got.load());
  EXPECT_EQ(lane.load(), a);  // the freed lane is the least loaded
}

TEST(DevicePoolTest, LeaseReleasesItsLane) {
  DevicePool pool(2, 4);
  {
    DevicePool::Lease first(pool), second(pool);
    EXPECT_NE(first.lane(), second.lane());
    EXPECT_EQ(pool.in_flight(), 2);
  }
  EXPECT_EQ(pool.in_flight(), 0);
  EXPECT_EQ(pool.running(), (std::vector<int>{0, 0}));
}

TEST(DevicePoolTest, ConcurrentUseKeepsCountsConsistent) {
  DevicePool pool(4, 3);
  std::atomic<int> peak{0}, now{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 200; ++i) {
        DevicePool::Lease lease(pool);
        const int n = ++now;
        int seen = peak.load();
        while (n > seen && !peak.compare_exchange_weak(seen, n)) {
        }
        --now;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_LE(peak.load(), 3);
  EXPECT_EQ(pool.in_flight(), 0);
  EXPECT_EQ(pool.running(), (std::vector<int>{0, 0, 0, 0}));
}

}  // namespace
}  // namespace kevin::env
