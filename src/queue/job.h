// job.h — what travels through Redis: evaluation jobs (everything a worker needs: the task's
// source, the candidate), their results, and the key layout under the deployment's prefix.
// docs/distributed.md describes the layout; producers and workers must agree on it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/status.h"
#include "engine/judge/eval_result.h"

namespace kevin::queue {

// Stream and key names under one prefix. Jobs go to a stream per GPU model ("any" takes
// every worker), results to a stream per job attempt.
struct Keys {
  std::string prefix = "kevin";
  std::string jobs(const std::string& model) const { return prefix + ":jobs:" + model; }
  std::string dead(const std::string& model) const { return prefix + ":dead:" + model; }
  std::string claim(const std::string& job_id) const { return prefix + ":claim:" + job_id; }
  std::string done(const std::string& job_id, const std::string& attempt) const {
    return prefix + ":done:" + job_id + ":" + attempt;
  }
  std::string worker(const std::string& name) const { return prefix + ":worker:" + name; }
  std::string worker_pattern() const { return prefix + ":worker:*"; }
};
inline constexpr const char* kGroup = "workers";
// The stream any worker of a backend takes from ("any-cuda", "any-cpu"): a CUDA candidate must
// never reach a CPU worker.
inline std::string any_model(const std::string& backend) { return "any-" + backend; }

// A live worker as its heartbeat (<prefix>:worker:<name>) describes it.
struct WorkerState {
  std::string name;
  std::string backend;  // "cuda" or "cpu"
  std::string model;    // model_key of its device ("nvidia-h200", "cpu")
  std::string device;   // the device's name ("NVIDIA H200", "CPU")
  // Whether it takes jobs of the stream <prefix>:jobs:<stream_model> (its model's, or
  // any-<its backend>).
  bool takes(const std::string& stream_model) const {
    return stream_model == model || stream_model == any_model(backend);
  }
};
// A heartbeat's fields. kInvalidArgument for one that is not a JSON object or has a mistyped
// field, kNotFound without "name" or "backend" (each naming the field).
Result<WorkerState> worker_state_from_json(const Json& j);
// "w0 (cpu, CPU), w1 (cuda, NVIDIA H200)"; "none" for no worker.
std::string describe_workers(const std::vector<WorkerState>& workers);

// A GPU model as a stream name: "NVIDIA H200" → "nvidia-h200", "CPU" → "cpu" ("unknown" for
// a name with no letter or digit).
std::string model_key(const std::string& device_name);

struct Job {
  enum class Kind { kEvaluate, kProblem };  // judge a candidate / build the problem statement
  Kind kind = Kind::kEvaluate;
  std::string id;           // content hash of (kind, model, task source, candidate)
  std::string attempt;      // the producer's attempt (results go to done(id, attempt))
  std::string task_id;      // the producer's id for the task (reported back, shown in logs)
  std::string task_source;  // the task's PyTorch source: workers need nothing else of it
  std::string candidate;    // the candidate source (kEvaluate)
  // The producer's judging settings (judging_key); a worker judging otherwise refuses the
  // job rather than give a verdict under other rules. "" = any (jobs of older producers).
  std::string judging;
  // The candidate's format as the producer resolved it ("kevin" or "kernelbench"): workers
  // judge it so, whatever their own --format.
  std::string format = "kevin";
};

// The judging settings a verdict depends on, as one canonical text ("seeds=5
// tolerance=default timeout_s=20 degenerate=refuse", then " baseline=compile" for a baseline
// other than eager): producers put it in every job, workers compare it with their own.
std::string judging_key(int seeds, const std::string& tolerance, double call_timeout_s,
                        bool allow_degenerate_tasks, const std::string& baseline = "eager");
Json to_json(const Job& job);
// kInvalidArgument naming the field for anything missing or mistyped.
Result<Job> job_from_json(const Json& j);
// The content hash a job is known by: identical work has one id across producers.
std::string job_id(Job::Kind kind, const std::string& model, const std::string& task_source,
                   const std::string& candidate, const std::string& judging = "",
                   const std::string& format = "kevin");

// What a worker answers: an evaluation, a problem statement, or why there is none.
struct JobResult {
  enum class Status { kOk, kHarnessError, kDeadLetter };
  Status status = Status::kOk;
  std::optional<engine::EvalResult> eval;  // kOk of a kEvaluate job
  std::string problem;                     // kOk of a kProblem job
  std::string error;                       // kHarnessError / kDeadLetter
  std::string worker;                      // who answered
};
Json to_json(const JobResult& r);
Result<JobResult> job_result_from_json(const Json& j);

}  // namespace kevin::queue
