// worker.h — the loop of `kevin worker`: take jobs from the Redis streams of this worker's
// GPU model (and "any-<backend>") with XREADGROUP, judge them on the local engine, publish results,
// acknowledge. Jobs of a worker that died are reclaimed after their lease (XAUTOCLAIM); a job
// delivered more than max_deliveries times goes to the dead-letter stream with a
// dead_letter result, so its producer is answered and the job cannot kill worker after worker.
#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/mutex.h"
#include "env/evaluator.h"
#include "queue/job.h"
#include "queue/redis.h"

namespace kevin::queue {

struct WorkerOptions {
  RedisAddress address;
  std::string name;                        // consumer name, unique per worker
  std::string model;                       // model_key of the local GPUs ("cpu" on the CPU)
  int jobs = 1;                            // jobs evaluated at once
  std::chrono::milliseconds lease{60000};  // a job idle this long may be taken by another worker
  int max_deliveries = 3;                  // then it is dead-lettered
  std::filesystem::path task_dir;          // task sources from jobs are written here
  std::chrono::seconds result_ttl{24 * 3600};
  std::chrono::seconds heartbeat{5};  // the worker's key expires after 3 of these
  std::chrono::milliseconds reconnect_backoff_max{5000};
  std::vector<int> gpus;  // CUDA ordinals judged on (for kevin workers)
  std::string judging;    // judging_key of this worker's engine; "" = takes any
};

class Worker {
 public:
  // `evaluator` is borrowed (the local engine, or a fake in tests).
  Worker(env::Evaluator* evaluator, WorkerOptions options);

  // Serves until `stop` is true, then stops taking jobs, finishes the ones it holds and
  // returns. Redis going away is waited out (reconnecting with backoff); an error Status only
  // when the worker cannot start (Redis unreachable at first contact).
  Status run(const std::atomic<bool>& stop);

  uint64_t finished() const { return finished_.load(); }

 private:
  void serve(const std::atomic<bool>& stop);
  void renew_leases(const std::atomic<bool>& stop);
  void beat(const std::atomic<bool>& stop);
  struct Taken {
    std::string stream, id, job_text;
  };
  // The next entries: a stale one of another worker first, else new ones (one per stream at
  // most; blocks ~1 s when there are none). All of them are this worker's to process.
  Result<std::vector<Taken>> next(RedisConnection& c);
  Status ensure_groups(RedisConnection& c);
  Status process(RedisConnection& c, const std::string& stream, const std::string& id,
                 const std::string& job_text);
  JobResult handle(const Job& job);
  Status publish(RedisConnection& c, const Job& job, const JobResult& result);
  // `command`, reconnecting (and re-creating the groups) while Redis is away, until `stop`.
  Result<RedisReply> persist(RedisConnection& c, const std::vector<std::string>& args,
                             const std::atomic<bool>& stop,
                             std::chrono::milliseconds read_timeout = std::chrono::seconds(10));

  env::Evaluator* evaluator_;
  WorkerOptions options_;
  Keys keys_;
  std::atomic<uint64_t> finished_{0};
  std::atomic<int> in_flight_{0};
  const std::atomic<bool>* stop_ = nullptr;
  Mutex mu_;
  // (stream, id) being evaluated here.
  std::set<std::pair<std::string, std::string>> held_ GUARDED_BY(mu_);
};

}  // namespace kevin::queue
