// device_gate_test.cpp — the device gate: shared holds run together, an exclusive one waits
// for them and is preferred over later shared ones, and a shared hold knows how much of the
// device its neighbours took (what decides if a timeout can be a neighbour's fault).
#include "core/device_gate.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

namespace kevin {
namespace {

using namespace std::chrono_literals;

TEST(DeviceGate, SharedHoldsRunTogether) {
  DeviceGate gate;
  SharedDeviceLock first(&gate);
  std::atomic<bool> second_held{false};
  std::thread other([&] {
    SharedDeviceLock second(&gate);
    second_held = true;
  });
  other.join();  // would hang if a shared hold excluded another
  EXPECT_TRUE(second_held);
}

TEST(DeviceGate, AnExclusiveHoldWaitsForSharedOnesAndLaterSharedOnesWaitForIt) {
  DeviceGate gate;
  std::atomic<int> step{0};
  auto shared = std::make_unique<SharedDeviceLock>(&gate);
  std::thread writer([&] {
    ExclusiveDeviceLock alone(&gate);
    EXPECT_EQ(step.load(), 1) << "the exclusive hold began while a shared one lasted";
    std::this_thread::sleep_for(50ms);
    step = 2;
  });
  std::this_thread::sleep_for(50ms);  // the writer is now waiting
  std::thread late_reader([&] {
    SharedDeviceLock late(&gate);
    EXPECT_EQ(step.load(), 2) << "a shared hold overtook the waiting exclusive one";
  });
  std::this_thread::sleep_for(50ms);
  step = 1;
  shared.reset();
  writer.join();
  late_reader.join();
}

TEST(DeviceGate, AHoldAloneOnTheDeviceLosesNothingToOthers) {
  DeviceGate gate;
  { SharedDeviceLock before(&gate); }  // over before the next began: not a neighbour
  SharedDeviceLock hold(&gate);
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(hold.ms_taken_by_others(), 0.0);
  EXPECT_EQ(SharedDeviceLock(nullptr).ms_taken_by_others(), 0.0);
}

double ms_between(std::chrono::steady_clock::time_point a,
                  std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

TEST(DeviceGate, ANeighbourTakesHalfTheDeviceForAsLongAsBothHoldIt) {
  DeviceGate gate;
  SharedDeviceLock hold(&gate);
  std::chrono::steady_clock::time_point came, went;
  std::thread([&] {
    came = std::chrono::steady_clock::now();
    {
      SharedDeviceLock neighbour(&gate);
      std::this_thread::sleep_for(100ms);
    }
    went = std::chrono::steady_clock::now();
  }).join();
  std::this_thread::sleep_for(50ms);  // alone again: this part is not counted
  const double taken = hold.ms_taken_by_others();
  EXPECT_GE(taken, 50.0) << "two holders for at least 100 ms: half of it each";
  EXPECT_LE(taken, ms_between(came, went) / 2) << "time alone was counted";
}

TEST(DeviceGate, TwoNeighboursTakeTwoThirds) {
  DeviceGate gate;
  const auto start = std::chrono::steady_clock::now();
  auto first = std::make_unique<SharedDeviceLock>(&gate);
  auto second = std::make_unique<SharedDeviceLock>(&gate);
  SharedDeviceLock hold(&gate);
  std::this_thread::sleep_for(90ms);
  first.reset();
  second.reset();
  const double taken = hold.ms_taken_by_others();
  EXPECT_GE(taken, 60.0);
  EXPECT_LE(taken, ms_between(start, std::chrono::steady_clock::now()) * 2 / 3);
}

}  // namespace
}  // namespace kevin
