// kernelgym.h — KernelGYM's REST evaluation API over the environment service, with its field
// names and enums, so clients written for it (Dr. Kernel's reward client) work unchanged:
// POST /evaluate (synchronous, idempotent by task_id), POST /evaluate/batch (concurrent),
// GET /status/{id}, GET /results/{id}. Candidates are judged by the same engine, gates and
// sandbox as every other path. docs/serve.md maps verdicts onto the fields.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "core/json.h"
#include "server/env_service.h"
#include "server/http_reply.h"

namespace kevin::server {

class KernelGymApi {
 public:
  // `service` is borrowed. At most `max_records` results are kept (oldest finished dropped
  // first); `batch_concurrency` bounds the evaluations one batch request runs at once (the
  // engine bounds them again globally).
  explicit KernelGymApi(EnvService* service, size_t max_records = 100000,
                        int batch_concurrency = 64)
      : service_(service), max_records_(max_records), batch_concurrency_(batch_concurrency) {}

  // Each blocks until its evaluations are done; run off the network threads. Bad requests
  // are 400 {"detail":…} with X-Error-Code VALIDATION_ERROR; an engine failure is 500 with
  // X-Error-Code SYSTEM_ERROR (and a failed record, so it can be refreshed).
  HttpReply evaluate(std::string_view body);
  HttpReply evaluate_batch(std::string_view body);
  // 404 {"detail":…} for an unknown id (or, for results, one still running).
  HttpReply status(const std::string& task_id) const;
  HttpReply results(const std::string& task_id) const;

  int active() const;          // evaluations running for this API
  uint64_t processed() const;  // evaluations finished (any outcome)

 private:
  struct Record {
    std::string status = "processing";  // processing | completed | failed
    Json response;                      // EvaluationResponse, once finished
    unsigned http_status = 200;
    std::string submitted_at;
  };
  struct Outcome {
    Json response;
    unsigned http_status;
  };

  // Validates, then evaluates or returns the stored (or in-flight) result for the task_id.
  Outcome evaluate_request(const Json& request);
  Outcome run(const std::string& task_id, const Json& request, const std::string& submitted_at);
  void store(const std::string& task_id, const Outcome& outcome);

  EnvService* service_;
  size_t max_records_;
  int batch_concurrency_;
  mutable std::mutex mu_;
  std::condition_variable finished_;
  std::map<std::string, Record> records_;
  std::deque<std::string> order_;  // task ids, oldest first, for eviction
  int active_ = 0;
  uint64_t processed_ = 0;
};

// The time now as ISO 8601 in UTC with microseconds ("2026-12-03T19:40:01.123456+00:00").
std::string iso_time_now();

}  // namespace kevin::server
