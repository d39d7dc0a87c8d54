// remote_evaluator.h — the engine on other machines: an env::Evaluator that queues each
// evaluation (and each problem statement) as a job on a Redis stream and waits for a worker's
// result. Identical work in flight is queued once across producers (a claim per job id);
// a harness failure or a dead-lettered job is an error Status, never a candidate's verdict.
// A job that no live worker takes fails after a short wait naming the workers there are.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
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
  // A job whose stream no live worker (by heartbeat) takes for this long is an error naming
  // the live workers; while one that takes it is live, only wait_limit applies.
  std::chrono::milliseconds worker_wait{60000};
  std::chrono::milliseconds reconnect_backoff_max{5000};
};

// The heartbeats (JSON objects) that have not expired, in key order; a key under the pattern
// whose value is not a JSON object is skipped. Errors of the connection.
Result<std::vector<Json>> live_heartbeats(RedisConnection& c, const Keys& keys);
// The workers of live_heartbeats, in name order; a heartbeat without a worker's fields is
// skipped. Errors of the connection.
Result<std::vector<WorkerState>> live_workers(RedisConnection& c, const Keys& keys);

// The backend a producer given none (--backend auto) judges on, from the live workers: cuda
// when one is on CUDA, cpu when all are on the CPU, cuda (the default) when none is live.
// `why` says so in words, naming the workers, for the log.
struct BackendChoice {
  std::string backend;
  std::string why;
};
BackendChoice choose_backend(const std::vector<WorkerState>& live);

class RemoteEvaluator final : public env::Evaluator {
 public:
  // Checks that Redis answers (kUnavailable otherwise) and warns when no live worker takes
  // this producer's stream yet. options.backend is "cuda" or "cpu".
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
  // Queues (unless already claimed) and waits for the job's result: kFailedPrecondition when
  // no live worker takes its stream for options.worker_wait, kDeadlineExceeded past
  // options.wait_limit.
  Result<JobResult> run(Job job);
  // Whether a live worker takes this producer's stream, as known at most a moment ago (one
  // check serves every waiting job). While the workers last seen taking it are live, the
  // check is one EXISTS; else it reads every heartbeat (live_workers).
  Result<bool> served(RedisConnection& c);
  // Keeps the names of `live` workers that take this producer's stream as served()'s answer.
  void remember_takers(const std::vector<WorkerState>& live);
  // Why a job of this producer's stream is not taken: the live workers and what would take it.
  std::string unserved(const std::vector<WorkerState>& live) const;
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
  std::vector<std::string> takers_ GUARDED_BY(mu_);  // live workers taking the stream, by name
  std::optional<std::chrono::steady_clock::time_point> checked_at_ GUARDED_BY(mu_);  // when
};

}  // namespace kevin::queue
