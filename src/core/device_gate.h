// device_gate.h — shared/exclusive access to one device for concurrent evaluations:
// correctness runs share a GPU, timing holds it alone. Writer-preferring, so a timing run
// waiting for the device is not starved by a stream of correctness runs. In core because the
// engine, the reference provider (tasks) and the device pool (env) all hold the same gate.
#pragma once

#include "core/mutex.h"

namespace kevin {

class DeviceGate {
 public:
  // Shared access (correctness runs); waits while timing holds the device or waits for it.
  void lock_shared();
  void unlock_shared();
  // Exclusive access (timing); waits for running correctness calls to finish.
  void lock();
  void unlock();

 private:
  Mutex mu_;
  CondVar cv_;
  int readers_ GUARDED_BY(mu_) = 0;
  int waiting_writers_ GUARDED_BY(mu_) = 0;
  bool writer_ GUARDED_BY(mu_) = false;
};

// RAII holders.
class SharedDeviceLock {
 public:
  explicit SharedDeviceLock(DeviceGate* g) : g_(g) {
    if (g_) g_->lock_shared();
  }
  ~SharedDeviceLock() {
    if (g_) g_->unlock_shared();
  }
  SharedDeviceLock(const SharedDeviceLock&) = delete;
  SharedDeviceLock& operator=(const SharedDeviceLock&) = delete;

 private:
  DeviceGate* g_;
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

}  // namespace kevin
