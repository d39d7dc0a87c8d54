// device_gate.cpp — a small writer-preferring readers/writer lock.
#include "engine/device_gate.h"

namespace kevin::engine {

void DeviceGate::lock_shared() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return !writer_ && waiting_writers_ == 0; });
  ++readers_;
}

void DeviceGate::unlock_shared() {
  std::lock_guard<std::mutex> lock(mu_);
  if (--readers_ == 0) cv_.notify_all();
}

void DeviceGate::lock() {
  std::unique_lock<std::mutex> lock(mu_);
  ++waiting_writers_;
  cv_.wait(lock, [this] { return !writer_ && readers_ == 0; });
  --waiting_writers_;
  writer_ = true;
}

void DeviceGate::unlock() {
  std::lock_guard<std::mutex> lock(mu_);
  writer_ = false;
  cv_.notify_all();
}

}  // namespace kevin::engine
