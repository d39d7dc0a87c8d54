// metrics.h — the server's counters, rendered in Prometheus' text format for GET /metrics:
// sessions (open, total, refused at capacity), evaluations by verdict, evaluations running
// and queued, request-body bytes reserved, and a histogram of evaluation latency. Thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>

#include "core/mutex.h"

namespace kevin::server {

class ServerMetrics {
 public:
  // Upper bounds (seconds) of the latency histogram's buckets; +Inf is implied.
  static constexpr std::array<double, 11> kLatencyBuckets = {0.1, 0.25, 0.5, 1,   2.5, 5,
                                                             10,  30,   60,  120, 300};

  void session_opened();
  void session_closed();
  void session_refused();
  void evaluation_started();
  // `outcome`: a verdict name, or "harness_error" when the engine itself failed.
  void evaluation_finished(const std::string& outcome, double seconds);

  int active_sessions() const;
  int evaluations_running() const;
  uint64_t evaluations_total() const;

  // The exposition text; `queued` is the number of jobs waiting for an evaluation thread,
  // `body_bytes` the bytes of HTTP request bodies reserved now (BodyBudget::used).
  std::string prometheus(size_t queued, size_t body_bytes) const;

 private:
  mutable Mutex mu_;
  int active_sessions_ GUARDED_BY(mu_) = 0;
  uint64_t sessions_total_ GUARDED_BY(mu_) = 0;
  uint64_t sessions_refused_ GUARDED_BY(mu_) = 0;
  int running_ GUARDED_BY(mu_) = 0;
  std::map<std::string, uint64_t> by_outcome_ GUARDED_BY(mu_);
  // Not cumulative.
  std::array<uint64_t, kLatencyBuckets.size()> bucket_counts_ GUARDED_BY(mu_){};
  uint64_t latency_count_ GUARDED_BY(mu_) = 0;
  double latency_sum_ GUARDED_BY(mu_) = 0;
};

}  // namespace kevin::server
