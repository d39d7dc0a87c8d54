// env_service.cpp — sessions, episodes and their observations. Observation fields follow the
// names OpenEnv kernel environments already use (problem_id, problem_description, feedback,
// compilation_success, correctness_pass, max_diff, speedup, ...) plus kevin's own.
#include "server/env_service.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "core/file.h"
#include "core/log.h"
#include "core/mutex.h"
#include "core/sha256.h"
#include "core/version.h"

namespace kevin::server {
namespace {

Json optional_number(const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); }

// The conversation kevin itself would send the model next: clients that do not build their
// own prompts forward these messages as they are.
Json next_prompt(const env::Episode& episode, const env::Evaluator& evaluator) {
  env::PromptConfig config;
  config.backend = evaluator.backend();
  config.device_name = evaluator.device_name();
  config.format = evaluator.answer_format();
  Json messages = Json::array();
  for (const auto& m : episode.next_prompt(config).messages)
    messages.push_back({{"role", m.role}, {"content", m.content}});
  return messages;
}

bool compiled(VerdictKind v) {
  return v == VerdictKind::kRuntimeError || v == VerdictKind::kTimeout ||
         v == VerdictKind::kWrongAnswer || v == VerdictKind::kCorrect;
}

Json turn_observation(const env::Episode& episode, const env::TurnOutcome& turn, int max_turns,
                      const env::Evaluator& evaluator) {
  const auto* eval = turn.eval ? &*turn.eval : nullptr;
  const int turn_number = static_cast<int>(episode.turns().size());
  Json o = {
      {"problem_id", episode.task().id},
      {"turn", turn_number},
      {"max_turns", max_turns},
      {"verdict", verdict_name(turn.verdict)},
      {"reason", turn.reason},
      {"feedback", turn.feedback},
      {"compilation_success", compiled(turn.verdict)},
      {"compilation_error",
       turn.verdict == VerdictKind::kCompileError ? Json(turn.feedback) : Json(nullptr)},
      {"correctness_pass", turn.correct()},
      {"max_diff", eval ? optional_number(eval->max_abs_error) : Json(nullptr)},
      {"speedup", optional_number(turn.speedup)},
      {"runtime_us", eval && eval->candidate_ms ? Json(*eval->candidate_ms * 1000) : Json(nullptr)},
      {"baseline_us", eval && eval->baseline_ms ? Json(*eval->baseline_ms * 1000) : Json(nullptr)},
      {"eval_ms", eval ? Json(eval->total_ms) : Json(nullptr)},
      {"score", turn.score},
      {"best_speedup", episode.best_speedup()},
      {"hack_flags",
       turn.verdict == VerdictKind::kRejected ? Json::array({turn.reason}) : Json::array()},
      {"gpu_info", evaluator.device_name()}};
  o["prompt"] = turn_number < max_turns ? next_prompt(episode, evaluator) : Json(nullptr);
  return o;
}

}  // namespace

env::ReplyRules reply_rules(const env::Evaluator& evaluator, env::Unfenced unfenced) {
  env::ReplyRules rules;
  rules.format = evaluator.answer_format();
  rules.either_format = evaluator.judges_kernelbench();
  rules.unfenced = unfenced;
  return rules;
}

Result<ResetParams> reset_params_from_json(const Json& data) {
  if (data.is_null()) return ResetParams{};
  if (!data.is_object()) return invalid_argument("reset data must be an object");
  ResetParams p;
  for (const auto& [key, value] : data.items()) {
    if (value.is_null()) continue;
    if (key == "problem_id" || key == "episode_id") {
      if (!value.is_string()) return invalid_argument("\"" + key + "\" must be a string");
      (key == "problem_id" ? p.problem_id : p.episode_id) = value.get<std::string>();
    } else if (key == "seed") {
      if (!value.is_number_integer() || value.get<int64_t>() < 0)
        return invalid_argument("\"seed\" must be an integer >= 0");
      p.seed = value.get<int64_t>();
    } else if (key == "max_turns") {
      if (!value.is_number_integer()) return invalid_argument("\"max_turns\" must be an integer");
      const int64_t turns = value.get<int64_t>();
      if (turns < 1 || turns > 1000) return invalid_argument("\"max_turns\" must be at least 1");
      p.max_turns = static_cast<int>(turns);
    } else {
      return invalid_argument("unknown reset field \"" + key +
                              "\" (expected problem_id, seed, episode_id, max_turns)");
    }
  }
  return p;
}

Json to_json(const StepReply& reply) {
  return {{"observation", reply.observation},
          {"reward", optional_number(reply.reward)},
          {"done", reply.done}};
}

EnvSession::~EnvSession() {
  {
    MutexLock lock(service_->mu_);
    --service_->sessions_open_;
  }
  service_->metrics_.session_closed();
}

Result<StepReply> EnvSession::reset(const ResetParams& params) {
  if (service_->stopping()) return unavailable("the server is stopping");
  const int limit = service_->options().max_turns;
  const int turns = params.max_turns.value_or(std::min(service_->options().default_turns, limit));
  if (turns > limit) {
    return invalid_argument("max_turns " + std::to_string(turns) +
                            " is more than this server allows (" + std::to_string(limit) + ")");
  }
  KEVIN_ASSIGN_OR_RETURN(tasks::TaskInfo task, service_->choose_task(params));
  env::Evaluator& evaluator = *service_->evaluator();
  KEVIN_ASSIGN_OR_RETURN(std::string problem, evaluator.problem(task));
  KEVIN_ASSIGN_OR_RETURN(std::string reference, read_file(task.path));
  episode_id_ = params.episode_id.value_or(service_->new_episode_id());
  episode_.reset();
  counted_.emplace(service_, "episode " + episode_id_);
  episode_.emplace(task, problem, &*counted_, service_->options().score);
  max_turns_ = turns;
  StepReply reply;
  reply.observation = {{"problem_id", task.id},
                       {"problem_description", problem},
                       {"reference_code", reference},
                       {"gpu_info", evaluator.device_name()},
                       {"backend", evaluator.backend()},
                       {"turn", 0},
                       {"max_turns", turns},
                       {"feedback", ""},
                       {"compilation_success", nullptr},
                       {"compilation_error", nullptr},
                       {"correctness_pass", nullptr},
                       {"max_diff", nullptr},
                       {"speedup", nullptr},
                       {"prompt", next_prompt(*episode_, evaluator)}};
  return reply;
}

Result<StepReply> EnvSession::step(const std::string& reply_text) {
  if (service_->stopping()) return unavailable("the server is stopping");
  if (!episode_) return failed_precondition("no episode: send reset before step");
  if (static_cast<int>(episode_->turns().size()) >= max_turns_) {
    return failed_precondition("the episode is done (" + std::to_string(max_turns_) +
                               " turns): send reset to start another");
  }
  KEVIN_ASSIGN_OR_RETURN(env::TurnOutcome turn,
                         episode_->step(reply_text, reply_rules(*service_->evaluator(),
                                                                env::Unfenced::kEntryDefined)));
  StepReply reply;
  reply.observation = turn_observation(*episode_, turn, max_turns_, *service_->evaluator());
  reply.reward = turn.score;
  reply.done = static_cast<int>(episode_->turns().size()) >= max_turns_;
  return reply;
}

Json EnvSession::state() const {
  Json s = {{"episode_id", episode_ ? Json(episode_id_) : Json(nullptr)},
            {"step_count", episode_ ? episode_->turns().size() : 0}};
  if (!episode_) return s;
  Json verdicts = Json::array();
  for (const auto& t : episode_->turns()) verdicts.push_back(verdict_name(t.verdict));
  s["problem_id"] = episode_->task().id;
  s["max_turns"] = max_turns_;
  s["done"] = static_cast<int>(episode_->turns().size()) >= max_turns_;
  s["verdicts"] = verdicts;
  s["best_speedup"] = episode_->best_speedup();
  return s;
}

Result<std::string> CountedEvaluator::problem(const tasks::TaskInfo& task) {
  return service_->evaluator()->problem(task);
}
Result<engine::EvalResult> CountedEvaluator::evaluate(const tasks::TaskInfo& task,
                                                      const std::string& source) {
  return service_->evaluate(task, source, caller_);
}
std::string CountedEvaluator::backend() const { return service_->evaluator()->backend(); }
std::string CountedEvaluator::device_name() const { return service_->evaluator()->device_name(); }

EnvService::EnvService(env::Evaluator* evaluator, std::vector<tasks::TaskInfo> tasks,
                       ServiceOptions options)
    : evaluator_(evaluator), tasks_(std::move(tasks)), options_(std::move(options)) {}

Result<std::unique_ptr<EnvSession>> EnvService::open_session() {
  if (stopping()) return unavailable("the server is stopping");
  {
    MutexLock lock(mu_);
    if (sessions_open_ >= options_.max_sessions) {
      metrics_.session_refused();
      return resource_exhausted("capacity reached: " + std::to_string(sessions_open_) + " of " +
                                std::to_string(options_.max_sessions) + " sessions open");
    }
    ++sessions_open_;
  }
  metrics_.session_opened();
  return std::unique_ptr<EnvSession>(new EnvSession(this));
}

Result<tasks::TaskInfo> EnvService::find_task(const std::string& name) const {
  for (const auto& t : tasks_) {
    if (t.id == name) return t;
  }
  const tasks::TaskInfo* found = nullptr;
  for (const auto& t : tasks_) {
    if (t.path.stem().string() != name) continue;
    if (found)
      return not_found("task \"" + name + "\" is ambiguous: give its id (" + found->id + ", " +
                       t.id + ", ...)");
    found = &t;
  }
  if (found) return *found;
  return not_found("no served task \"" + name + "\" (GET /metadata lists them)");
}

Result<tasks::TaskInfo> EnvService::adhoc_task(const std::string& reference_source) {
  if (!options_.accept_reference_code) {
    return failed_precondition(
        "reference_code is refused: it would run unsandboxed in the trusted reference worker. Use "
        "problem_id "
        "(a served task), or start the server with --accept-reference-code if every client is "
        "trusted");
  }
  if (reference_source.find_first_not_of(" \t\r\n") == std::string::npos)
    return invalid_argument("reference_code is empty");
  const std::string hash = sha256_hex(reference_source).substr(0, 24);
  tasks::TaskInfo task{"adhoc/" + hash, "adhoc", tasks::task_family(reference_source),
                       options_.adhoc_dir / (hash + ".py")};
  std::error_code ec;
  if (!std::filesystem::exists(task.path, ec)) {
    std::filesystem::create_directories(options_.adhoc_dir, ec);
    KEVIN_RETURN_IF_ERROR(write_file_atomic(task.path, reference_source));
  }
  return task;
}

Result<engine::EvalResult> EnvService::evaluate(const tasks::TaskInfo& task,
                                                const std::string& source,
                                                const std::string& caller) {
  if (stopping()) return unavailable("the server is stopping");
  metrics_.evaluation_started();
  const auto start = std::chrono::steady_clock::now();
  Result<engine::EvalResult> r = evaluator_->evaluate(task, source);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string outcome = r.is_ok() ? verdict_name(r->verdict) : "harness_error";
  metrics_.evaluation_finished(outcome, seconds);
  char took[32];
  std::snprintf(took, sizeof took, "%.2f", seconds);
  KEVIN_LOG(info) << "eval " << caller << " task=" << task.id << " verdict=" << outcome
                  << (r.is_ok() && r->speedup ? " speedup=" + std::to_string(*r->speedup) : "")
                  << " seconds=" << took << (r.is_ok() ? "" : " error=" + r.status().to_string());
  return r;
}

Json EnvService::metadata() const {
  Json ids = Json::array();
  for (const auto& t : tasks_) ids.push_back(t.id);
  return {{"name", options_.name},
          {"description",
           "Multi-turn CUDA/C++ kernel writing: reset gives a PyTorch task, each step judges the "
           "model's reply "
           "(the kernel in a fenced code block) and returns kevin's verdict, feedback and reward "
           "(0.3 for a correct kernel plus its speedup over PyTorch)."},
          {"version", version_string()},
          {"author", "kevin"},
          {"documentation_url", "docs/serve.md"},
          {"backend", evaluator_->backend()},
          {"device", evaluator_->device_name()},
          {"max_turns", options_.max_turns},
          {"max_sessions", options_.max_sessions},
          {"tasks", ids}};
}

Json EnvService::schema() {
  const Json action = {
      {"title", "KernelAction"},
      {"description",
       "The model's whole reply; the kernel is the last fenced C++/CUDA code block in it."},
      {"type", "object"},
      {"properties",
       {{"code",
         {{"title", "Code"},
          {"type", "string"},
          {"description", "the model's reply (prose, reasoning, fenced code)"}}},
        {"problem_id",
         {{"title", "Problem Id"},
          {"type", "string"},
          {"description", "the task, for stateless POST /step only"}}},
        {"metadata", {{"title", "Metadata"}, {"type", "object"}}}}},
      {"required", {"code"}},
      {"additionalProperties", false}};
  auto number_or_null = [](const char* title) {
    return Json{{"title", title}, {"type", {"number", "null"}}};
  };
  auto typed = [](const char* title, const char* type) {
    return Json{{"title", title}, {"type", type}};
  };
  const Json observation = {
      {"title", "KernelObservation"},
      {"type", "object"},
      {"properties",
       {{"problem_id", typed("Problem Id", "string")},
        {"problem_description", typed("Problem Description", "string")},
        {"reference_code", typed("Reference Code", "string")},
        {"gpu_info", typed("Gpu Info", "string")},
        {"turn", typed("Turn", "integer")},
        {"max_turns", typed("Max Turns", "integer")},
        {"feedback", typed("Feedback", "string")},
        {"verdict", typed("Verdict", "string")},
        {"compilation_success", {{"title", "Compilation Success"}, {"type", {"boolean", "null"}}}},
        {"correctness_pass", {{"title", "Correctness Pass"}, {"type", {"boolean", "null"}}}},
        {"max_diff", number_or_null("Max Diff")},
        {"speedup", number_or_null("Speedup")},
        {"runtime_us", number_or_null("Runtime Us")},
        {"baseline_us", number_or_null("Baseline Us")},
        {"score", typed("Score", "number")},
        {"prompt", {{"title", "Prompt"}, {"type", {"array", "null"}}}}}}};
  const Json state = {
      {"title", "State"},
      {"type", "object"},
      {"properties",
       {{"episode_id", {{"title", "Episode Id"}, {"type", {"string", "null"}}}},
        {"step_count", {{"title", "Step Count"}, {"type", "integer"}, {"minimum", 0}}}}},
      {"additionalProperties", true}};
  return {{"action", action}, {"observation", observation}, {"state", state}};
}

Result<tasks::TaskInfo> EnvService::choose_task(const ResetParams& params) {
  if (params.problem_id) return find_task(*params.problem_id);
  const uint64_t pick = params.seed ? static_cast<uint64_t>(*params.seed) : next_task_++;
  return tasks_[pick % tasks_.size()];
}

std::string EnvService::new_episode_id() {
  MutexLock lock(mu_);
  char id[40];
  std::snprintf(id, sizeof id, "%016llx%016llx", static_cast<unsigned long long>(rng_()),
                static_cast<unsigned long long>(rng_()));
  return id;
}

}  // namespace kevin::server
