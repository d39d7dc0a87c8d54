// metrics.cpp — counting under one mutex, and the text format (HELP/TYPE lines, cumulative
// histogram buckets with le labels).
#include "server/metrics.h"

#include <sstream>

namespace kevin::server {

void ServerMetrics::session_opened() {
  MutexLock lock(mu_);
  ++active_sessions_;
  ++sessions_total_;
}

void ServerMetrics::session_closed() {
  MutexLock lock(mu_);
  --active_sessions_;
}

void ServerMetrics::session_refused() {
  MutexLock lock(mu_);
  ++sessions_refused_;
}

void ServerMetrics::evaluation_started() {
  MutexLock lock(mu_);
  ++running_;
}

void ServerMetrics::evaluation_finished(const std::string& outcome, double seconds) {
  MutexLock lock(mu_);
  --running_;
  ++by_outcome_[outcome];
  ++latency_count_;
  latency_sum_ += seconds;
  for (size_t i = 0; i < kLatencyBuckets.size(); ++i) {
    if (seconds <= kLatencyBuckets[i]) {
      ++bucket_counts_[i];
      break;
    }
  }
}

int ServerMetrics::active_sessions() const {
  MutexLock lock(mu_);
  return active_sessions_;
}

int ServerMetrics::evaluations_running() const {
  MutexLock lock(mu_);
  return running_;
}

uint64_t ServerMetrics::evaluations_total() const {
  MutexLock lock(mu_);
  return latency_count_;
}

namespace {

void family(std::ostringstream& out, const char* name, const char* type, const char* help) {
  out << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n';
}

}  // namespace

std::string ServerMetrics::prometheus(size_t queued, size_t body_bytes) const {
  MutexLock lock(mu_);
  std::ostringstream out;
  family(out, "kevin_sessions_active", "gauge",
         "Environment sessions open now (WebSocket, and one per stateless HTTP reset or step).");
  out << "kevin_sessions_active " << active_sessions_ << '\n';
  family(out, "kevin_sessions_total", "counter", "Environment sessions opened.");
  out << "kevin_sessions_total " << sessions_total_ << '\n';
  family(out, "kevin_sessions_refused_total", "counter",
         "Sessions refused because the server was at capacity.");
  out << "kevin_sessions_refused_total " << sessions_refused_ << '\n';
  family(out, "kevin_evaluations_running", "gauge", "Evaluations on the engine now.");
  out << "kevin_evaluations_running " << running_ << '\n';
  family(out, "kevin_queue_depth", "gauge", "Requests waiting for an evaluation thread.");
  out << "kevin_queue_depth " << queued << '\n';
  family(out, "kevin_request_body_bytes_reserved", "gauge",
         "Bytes of HTTP request bodies being received or handled now, out of the server's "
         "budget (--max-buffered-body-mb).");
  out << "kevin_request_body_bytes_reserved " << body_bytes << '\n';
  family(out, "kevin_evaluations_total", "counter",
         "Finished evaluations by verdict (harness_error: the engine failed).");
  for (const auto& [outcome, n] : by_outcome_)
    out << "kevin_evaluations_total{verdict=\"" << outcome << "\"} " << n << '\n';
  family(out, "kevin_evaluation_seconds", "histogram",
         "Wall time of one evaluation, compile to verdict.");
  uint64_t cumulative = 0;
  for (size_t i = 0; i < kLatencyBuckets.size(); ++i) {
    cumulative += bucket_counts_[i];
    out << "kevin_evaluation_seconds_bucket{le=\"" << kLatencyBuckets[i] << "\"} " << cumulative
        << '\n';
  }
  out << "kevin_evaluation_seconds_bucket{le=\"+Inf\"} " << latency_count_ << '\n';
  out << "kevin_evaluation_seconds_sum " << latency_sum_ << '\n';
  out << "kevin_evaluation_seconds_count " << latency_count_ << '\n';
  return out.str();
}

}  // namespace kevin::server
