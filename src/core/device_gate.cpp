// device_gate.cpp — a small writer-preferring readers/writer lock that also counts how much
// of the device shared holders took from one another.
#include "core/device_gate.h"

namespace kevin {

void DeviceGate::account() const {
  const Clock::time_point now = Clock::now();
  if (readers_ > 1) {
    const double span = std::chrono::duration<double, std::milli>(now - accounted_at_).count();
    shared_ms_ += span * (readers_ - 1) / readers_;
  }
  accounted_at_ = now;
}

DeviceGate::SharedTicket DeviceGate::lock_shared() {
  MutexLock lock(mu_);
  while (writer_ || waiting_writers_ > 0) cv_.wait(mu_);
  account();
  ++readers_;
  return {shared_ms_};
}

void DeviceGate::unlock_shared() {
  MutexLock lock(mu_);
  account();
  if (--readers_ == 0) cv_.notify_all();
}

double DeviceGate::ms_taken_since(const SharedTicket& ticket) const {
  MutexLock lock(mu_);
  account();
  return shared_ms_ - ticket.shared_ms;
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
