// device_gate.h — shared/exclusive access to one device for concurrent evaluations:
// correctness runs share a GPU, timing holds it alone. Writer-preferring, so a timing run
// waiting for the device is not starved by a stream of correctness runs.
#pragma once

#include <condition_variable>
#include <mutex>

namespace kevin::engine {

class DeviceGate {
 public:
  // Shared access (correctness runs); waits while timing holds the device or waits for it.
  void lock_shared();
  void unlock_shared();
  // Exclusive access (timing); waits for running correctness calls to finish.
  void lock();
  void unlock();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int readers_ = 0;
  int waiting_writers_ = 0;
  bool writer_ = false;
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

}  // namespace kevin::engine
