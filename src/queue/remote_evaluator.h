// remote_evaluator.h — the engine on other machines: an env::Evaluator that queues each
// evaluation (and each problem statement) as a job on a Redis stream and waits for a worker's
// result. Identical work in flight is queued once across producers (a claim per job id);
// a harness failure or a dead-lettered job is an error Status, never a candidate's verdict.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/mutex.h"
#include "env/evaluator.h"
#include "queue/job.h"
#include "queue/redis.h"

namespace kevin::queue {

struct RemoteOptions {
  RedisAddress address;
  std::string backend = "cuda";  // what the workers judge on ("cuda" or "cpu")
  std::string model;             // a GPU model (model_key); "": any worker of the backend
  std::string stream_model() const { return model.empty() ? any_model(backend) : model; }
  std::string judging;  // judging_key of this producer's settings, sent with every evaluation
  // Candidate formats sent (docs/kernelbench.md): "kevin", "kernelbench", or "auto" (each
  // source by its text); every job carries the one it resolves to.
  std::string format = "kevin";
  std::chrono::seconds result_ttl{24 * 3600};  // results and claims kept this long
  std::chrono::seconds wait_limit{3 * 3600};   // a job not answered by then is an error
  std::chrono::milliseconds reconnect_backoff_max{5000};
};

class RemoteEvaluator final : public env::Evaluator {
 public:
  // Checks that Redis answers. kUnavailable otherwise.
  static Result<std::unique_ptr<RemoteEvaluator>> create(RemoteOptions options);

  Result<std::string> problem(const tasks::TaskInfo& task) override;
  Result<engine::EvalResult> evaluate(const tasks::TaskInfo& task,
                                      const std::string& source) override;
  std::string backend() const override { return options_.backend; }
  std::string device_name() const override;
  engine::CandidateFormat answer_format() const override {
    return options_.format == "kernelbench" ? engine::CandidateFormat::kKernelBench
                                            : engine::CandidateFormat::kKevin;
  }
  // The workers judge them (a worker that cannot answers each such job with an error).
  bool judges_kernelbench() const override { return options_.format != "kevin"; }

 private:
  explicit RemoteEvaluator(RemoteOptions options) : options_(std::move(options)) {}
  // Queues (unless already claimed) and waits for the job's result.
  Result<JobResult> run(Job job);
  // Live workers (by heartbeat) that take this evaluator's jobs; the first one's device name
  // goes to `device` when that is empty.
  Result<int> count_workers(RedisConnection& c, std::string* device) const;
  // A connection for this call (from the idle list, or new); returned by the guard.
  Result<std::unique_ptr<RedisConnection>> take();
  void give_back(std::unique_ptr<RedisConnection> c);
  // `command` on `c`, reconnecting with backoff while Redis is away (up to the wait limit).
  Result<RedisReply> persist(RedisConnection& c, const std::vector<std::string>& args,
                             std::chrono::milliseconds read_timeout = std::chrono::seconds(10));

  RemoteOptions options_;
  Keys keys_;
  mutable Mutex mu_;
  std::vector<std::unique_ptr<RedisConnection>> idle_ GUARDED_BY(mu_);
  std::map<std::string, std::string> problems_ GUARDED_BY(mu_);  // by task source hash
  std::string device_name_ GUARDED_BY(mu_);                      // from the first result
};

}  // namespace kevin::queue
