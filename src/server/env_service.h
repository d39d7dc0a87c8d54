// env_service.h — the environment as a service, independent of any wire protocol: the served
// tasks, session slots under a global limit, multi-turn episodes (reset → problem, step →
// verdict, feedback and reward), and every evaluation counted and logged. The OpenEnv and
// KernelGYM front ends (openenv.h, kernelgym.h) translate their messages into these calls.
#pragma once

#include <atomic>
#include <filesystem>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/mutex.h"
#include "core/status.h"
#include "env/episode.h"
#include "env/evaluator.h"
#include "reward/reward.h"
#include "server/metrics.h"
#include "tasks/suite.h"

namespace kevin::server {

struct ServiceOptions {
  int max_sessions = 64;      // open sessions at once (OpenEnv's max_concurrent_envs)
  int max_turns = 8;          // the most steps an episode may take (reset may ask for fewer)
  int default_turns = 4;      // an episode's length when reset does not say
  reward::ScoreConfig score;  // reward = correct_bonus + speedup for a correct kernel
  // Where reference sources sent with KernelGYM requests are kept (content-addressed).
  std::filesystem::path adhoc_dir;
  // Reference sources from clients run in the trusted reference worker (not sandboxed):
  // refused unless the operator trusts every client that can reach the server.
  bool accept_reference_code = false;
  std::string name = "kevin";  // the environment's name in /metadata
};

// What an OpenEnv reset may carry (its `data` object).
struct ResetParams {
  std::optional<std::string> problem_id;  // a served task id or file stem; absent: chosen by seed
  std::optional<int64_t> seed;            // >= 0
  std::optional<std::string> episode_id;
  std::optional<int> max_turns;  // 1 .. the server's max_turns
};
// The reset `data` object as ResetParams. Unknown keys and wrong types are kInvalidArgument
// naming the key (OpenEnv filters reset data by signature; a typo silently doing nothing
// would be worse than an error).
Result<ResetParams> reset_params_from_json(const Json& data);

// OpenEnv's reply to reset and step: the observation, the step's reward (null on reset) and
// whether the episode is over.
struct StepReply {
  Json observation;
  std::optional<double> reward;
  bool done = false;
};
Json to_json(const StepReply& reply);  // {"observation":…, "reward":…, "done":…}

// How the service reads a client's reply (env::read_reply): in the format `evaluator` asks
// for, or either where it judges KernelBench answers too; a reply without fences by `unfenced`.
env::ReplyRules reply_rules(const env::Evaluator& evaluator, env::Unfenced unfenced);

class EnvService;

// The service's evaluator as an episode sees it: every evaluation counted in the metrics and
// logged with the caller's label (EnvService::evaluate). Borrows the service.
class CountedEvaluator final : public env::Evaluator {
 public:
  CountedEvaluator(EnvService* service, std::string caller)
      : service_(service), caller_(std::move(caller)) {}
  Result<std::string> problem(const tasks::TaskInfo& task) override;
  Result<engine::EvalResult> evaluate(const tasks::TaskInfo& task,
                                      const std::string& source) override;
  std::string backend() const override;
  std::string device_name() const override;

 private:
  EnvService* service_;
  std::string caller_;
};

// One environment instance: a sequence of episodes on one connection. Not thread-safe: its
// connection hands it one message at a time. Frees its slot in the service when destroyed.
class EnvSession {
 public:
  ~EnvSession();
  EnvSession(const EnvSession&) = delete;
  EnvSession& operator=(const EnvSession&) = delete;

  // Starts an episode. Errors: kNotFound (no such served task), kInvalidArgument (max_turns
  // out of range), kUnavailable (the server is stopping), or the task's problem statement
  // could not be built (the task file is broken).
  Result<StepReply> reset(const ResetParams& params);
  // Judges the model's whole reply (prose, reasoning, fenced code: the kernel is extracted
  // here; a reply with no usable kernel is a parse_error turn, not an error). Errors:
  // kFailedPrecondition (no episode yet, or it is done), kUnavailable (stopping), or the
  // engine's own failure (nothing is recorded; the step can be sent again).
  Result<StepReply> step(const std::string& reply);
  // OpenEnv's State: episode_id, step_count, and ours (problem_id, max_turns, done, verdicts,
  // best_speedup).
  Json state() const;

 private:
  friend class EnvService;
  explicit EnvSession(EnvService* service) : service_(service) {}

  EnvService* service_;
  std::optional<CountedEvaluator> counted_;  // the episode's evaluator (labelled by episode id)
  std::optional<env::Episode> episode_;
  std::string episode_id_;
  int max_turns_ = 0;
};

class EnvService {
 public:
  // `evaluator` is borrowed and must outlive the service and every session. `tasks` are the
  // served tasks (at least one).
  EnvService(env::Evaluator* evaluator, std::vector<tasks::TaskInfo> tasks, ServiceOptions options);

  // A new session, or kResourceExhausted when max_sessions are open (kUnavailable once
  // begin_shutdown() was called). The session borrows this service.
  Result<std::unique_ptr<EnvSession>> open_session();

  // A served task by id or unique file stem — never by path, so a request cannot reach a
  // file outside the served set. kNotFound otherwise.
  Result<tasks::TaskInfo> find_task(const std::string& name) const;
  // The task for a reference source sent with a request, stored under adhoc_dir by content
  // hash (id "adhoc/<hash>"). Errors: kFailedPrecondition unless accept_reference_code (the
  // source would run unsandboxed in the reference worker), kInvalidArgument for an empty
  // source, or the file cannot be written.
  Result<tasks::TaskInfo> adhoc_task(const std::string& reference_source);
  // Judges `source` on the engine, counted in the metrics and logged as one line.
  Result<engine::EvalResult> evaluate(const tasks::TaskInfo& task, const std::string& source,
                                      const std::string& caller);

  // /metadata and /schema bodies.
  Json metadata() const;
  static Json schema();

  // Refuses new sessions, resets, steps and evaluations from now on (in-flight ones finish).
  void begin_shutdown() { stopping_ = true; }
  bool stopping() const { return stopping_; }

  const std::vector<tasks::TaskInfo>& tasks() const { return tasks_; }
  const ServiceOptions& options() const { return options_; }
  env::Evaluator* evaluator() const { return evaluator_; }
  ServerMetrics& metrics() { return metrics_; }

 private:
  friend class EnvSession;
  // The task a reset names, or one chosen by its seed (round robin when there is none).
  Result<tasks::TaskInfo> choose_task(const ResetParams& params);
  std::string new_episode_id();

  env::Evaluator* evaluator_;
  std::vector<tasks::TaskInfo> tasks_;
  ServiceOptions options_;
  ServerMetrics metrics_;
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> next_task_{0};
  Mutex mu_;
  int sessions_open_ GUARDED_BY(mu_) = 0;
  std::mt19937_64 rng_ GUARDED_BY(mu_){std::random_device{}()};
};

}  // namespace kevin::server
