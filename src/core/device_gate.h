// device_gate.h — shared/exclusive access to one device for concurrent evaluations:
// correctness runs share a GPU, timing holds it alone. Writer-preferring, so a timing run
// waiting for the device is not starved by a stream of correctness runs. In core because the
// engine, the reference provider (tasks) and the device pool (env) all hold the same gate.
#pragma once

#include <chrono>
#include <functional>
#include <optional>

#include "core/mutex.h"

namespace kevin {

class DeviceGate {
 public:
  // Where the gate's count of device time taken by sharing stood when a shared hold began.
  struct SharedTicket {
    double shared_ms = 0;
  };
  // Shared access (correctness runs); waits while timing holds the device or waits for it.
  SharedTicket lock_shared();
  void unlock_shared();
  // The device time (ms) other shared holders took from the hold `ticket` began, up to now:
  // each moment counts by their share of the device, (k-1)/k with k holders. What neighbours
  // can have cost a call that ran out of time; 0 when it had the device to itself. Meaningful
  // only while that hold lasts.
  double ms_taken_since(const SharedTicket& ticket) const;
  // Exclusive access (timing); waits for running correctness calls to finish.
  void lock();
  void unlock();

 private:
  using Clock = std::chrono::steady_clock;
  // Brings shared_ms_ up to now (at every change of readers_ and every question).
  void account() const REQUIRES(mu_);

  mutable Mutex mu_;
  CondVar cv_;
  // The integral over time of (k-1)/k for k > 1 shared holders: the same for every holder, so
  // a hold's share is the difference between its ends.
  mutable double shared_ms_ GUARDED_BY(mu_) = 0;
  mutable Clock::time_point accounted_at_ GUARDED_BY(mu_) = Clock::now();
  int readers_ GUARDED_BY(mu_) = 0;
  int waiting_writers_ GUARDED_BY(mu_) = 0;
  bool writer_ GUARDED_BY(mu_) = false;
};

// RAII holders.
class SharedDeviceLock {
 public:
  explicit SharedDeviceLock(DeviceGate* g) : g_(g) {
    if (g_) ticket_ = g_->lock_shared();
  }
  ~SharedDeviceLock() {
    if (g_) g_->unlock_shared();
  }
  SharedDeviceLock(const SharedDeviceLock&) = delete;
  SharedDeviceLock& operator=(const SharedDeviceLock&) = delete;
  // The device time (ms) other holders took during this hold so far (0 without a gate).
  double ms_taken_by_others() const { return g_ ? g_->ms_taken_since(ticket_) : 0.0; }

 private:
  DeviceGate* g_;
  DeviceGate::SharedTicket ticket_;
};

class ExclusiveDeviceLock {
 public:
  explicit ExclusiveDeviceLock(DeviceGate* g) : g_(g) {
    if (g_) g_->lock();
  }
  ~ExclusiveDeviceLock() {
    if (g_) g_->unlock();
  }
  ExclusiveDeviceLock(const ExclusiveDeviceLock&) = delete;
  ExclusiveDeviceLock& operator=(const ExclusiveDeviceLock&) = delete;

 private:
  DeviceGate* g_;
};

// How work that first prepares on a device and then times there holds its gate, in two steps:
// `share()` before it prepares (builds inputs, runs untimed calls), `alone()` once only the
// timed calls are left (giving up the shared hold first, so two such holders never wait for
// each other). Each is called at most once, in that order, by the side that does the work once
// it holds everything else it needs: the gate is the last thing it takes. Whoever makes the
// pair owns the holds and releases them when the work is over.
struct TwoStepHold {
  std::function<void()> share, alone;
};

// A TwoStepHold of `gate`'s own locks (null gate: holds nothing), for work that needs no
// account of its waits. Releases whatever it holds when destroyed; not copyable, since
// hold()'s functions refer to it.
class GateSteps {
 public:
  explicit GateSteps(DeviceGate* gate) : gate_(gate) {}
  GateSteps(const GateSteps&) = delete;
  GateSteps& operator=(const GateSteps&) = delete;
  TwoStepHold hold() {
    return {[this] { shared_.emplace(gate_); },
            [this] {
              shared_.reset();
              alone_.emplace(gate_);
            }};
  }

 private:
  DeviceGate* gate_;
  std::optional<SharedDeviceLock> shared_;
  std::optional<ExclusiveDeviceLock> alone_;
};

}  // namespace kevin
