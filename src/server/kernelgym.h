// kernelgym.h — KernelGYM's REST evaluation API over the environment service, with its field
// names and enums, so clients written for it (Dr. Kernel's reward client) work unchanged:
// POST /evaluate (synchronous, idempotent by task_id), POST /evaluate/batch (concurrent),
// GET /status/{id}, GET /results/{id}. Candidates are judged by the same engine, gates and
// sandbox as every other path. docs/serve.md maps verdicts onto the fields.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "core/json.h"
#include "core/mutex.h"
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
  // The finished record of task_id (after waiting for one in flight), unless force_refresh;
  // otherwise nullopt, with a new "processing" record claimed for the caller to run and store.
  std::optional<Outcome> stored_or_claimed(const std::string& task_id, bool force_refresh,
                                           std::string* submitted_at);
  bool processing(const std::string& task_id) const REQUIRES(mu_);
  Outcome run(const std::string& task_id, const Json& request, const std::string& submitted_at);
  void store(const std::string& task_id, const Outcome& outcome);

  EnvService* service_;
  size_t max_records_;
  int batch_concurrency_;
  mutable Mutex mu_;
  CondVar finished_;
  std::map<std::string, Record> records_ GUARDED_BY(mu_);
  std::deque<std::string> order_ GUARDED_BY(mu_);  // task ids, oldest first, for eviction
  int active_ GUARDED_BY(mu_) = 0;
  uint64_t processed_ GUARDED_BY(mu_) = 0;
};

// The time now as ISO 8601 in UTC with microseconds ("2026-12-03T19:40:01.123456+00:00").
std::string iso_time_now();

}  // namespace kevin::server
