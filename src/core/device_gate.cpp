// device_gate.cpp — a small writer-preferring readers/writer lock.
#include "core/device_gate.h"

namespace kevin {

void DeviceGate::lock_shared() {
  MutexLock lock(mu_);
  while (writer_ || waiting_writers_ > 0) cv_.wait(mu_);
  ++readers_;
}

void DeviceGate::unlock_shared() {
  MutexLock lock(mu_);
  if (--readers_ == 0) cv_.notify_all();
}

void DeviceGate::lock() {
  MutexLock lock(mu_);
  ++waiting_writers_;
  while (writer_ || readers_ > 0) cv_.wait(mu_);
  --waiting_writers_;
  writer_ = true;
}

void DeviceGate::unlock() {
  MutexLock lock(mu_);
  writer_ = false;
  cv_.notify_all();
}

}  // namespace kevin
