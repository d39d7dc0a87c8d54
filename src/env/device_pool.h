// device_pool.h — which GPU an evaluation runs on. A pool holds one lane per device and a
// limit on evaluations in flight across all lanes; each new evaluation goes to the lane with
// the fewest running, so correctness work spreads over every GPU while timing (held per lane
// by that lane's DeviceGate) stays exclusive per GPU.
#pragma once

#include <cstddef>
#include <vector>

#include "core/mutex.h"

namespace kevin::env {

class DevicePool {
 public:
  // `lanes` >= 1 devices; at most `max_in_flight` (>= 1) evaluations at a time over all of them.
  DevicePool(size_t lanes, int max_in_flight);

  // Blocks until fewer than max_in_flight evaluations run, then takes the least-loaded lane
  // (the lowest index among equals) and returns its index. Every acquire() needs a release().
  size_t acquire();
  void release(size_t lane);

  int in_flight() const;
  std::vector<int> running() const;  // evaluations per lane

  // Holds a lane for one scope.
  class Lease {
   public:
    explicit Lease(DevicePool& pool) : pool_(pool), lane_(pool.acquire()) {}
    ~Lease() { pool_.release(lane_); }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    size_t lane() const { return lane_; }

   private:
    DevicePool& pool_;
    size_t lane_;
  };

 private:
  mutable Mutex mu_;
  CondVar slot_free_;
  std::vector<int> running_ GUARDED_BY(mu_);
  int in_flight_ GUARDED_BY(mu_) = 0;
  const int max_in_flight_;
};

}  // namespace kevin::env
