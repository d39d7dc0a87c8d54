// device_pool.cpp — least-loaded lane choice under a global in-flight limit.
#include "env/device_pool.h"

#include <algorithm>
#include <cassert>

namespace kevin::env {

DevicePool::DevicePool(size_t lanes, int max_in_flight)
    : running_(std::max<size_t>(1, lanes), 0), max_in_flight_(std::max(1, max_in_flight)) {}

size_t DevicePool::acquire() {
  MutexLock lock(mu_);
  while (in_flight_ >= max_in_flight_) slot_free_.wait(mu_);
  const auto least = std::min_element(running_.begin(), running_.end());
  ++*least;
  ++in_flight_;
  return static_cast<size_t>(least - running_.begin());
}

void DevicePool::release(size_t lane) {
  {
    MutexLock lock(mu_);
    assert(lane < running_.size() && running_[lane] > 0);
    --running_[lane];
    --in_flight_;
  }
  slot_free_.notify_one();
}

int DevicePool::in_flight() const {
  MutexLock lock(mu_);
  return in_flight_;
}

std::vector<int> DevicePool::running() const {
  MutexLock lock(mu_);
  return running_;
}

}  // namespace kevin::env
