// run_command.cpp — `kevin run`: a model optimises tasks over several turns (rollout module)
// into a run directory (config.json, run.db, trajectories.jsonl, best/, metrics.json), and
// `kevin run --resume RUN_DIR` finishes a run that was stopped. Wiring only.
#include <CLI/CLI.hpp>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <ctime>
#include <iomanip>
#include <ostream>
#include <set>
#include <sstream>

#include "cli/app.h"
#include "cli/engine_flags.h"
#include "cli/interrupt.h"
#include "cli/paths.h"
#include "cli/run_setup.h"
#include "core/file.h"
#include "core/log.h"
#include "core/version.h"
#include "env/engine_evaluator.h"
#include "report/metrics.h"
#include "rollout/progress.h"
#include "rollout/records.h"
#include "rollout/rollout.h"
#include "sys/cuda_probe.h"
#include "tasks/suite.h"

namespace kevin::cli {
namespace fs = std::filesystem;

namespace {

struct RunArgs {
  std::vector<std::string> tasks;
  std::string tasks_dir, split, out, resume;
  int trajectories = 16, turns = 8, budget = 0;
  std::string allocations, search = "none";
  int beam_width = 4, beam_rounds = 2;
  std::string llm, model, api_key_env = "OPENAI_API_KEY", policy;
  bool open_think = false;
  double temperature = 0.9, top_p = 1.0, request_timeout_s = 600;
  int max_tokens = 16384, max_concurrency = 64, context_tokens = 24000, parallel = 16;
  std::vector<std::string> stop;
  double gamma = 0.4;
  std::string returns = "sum", advantages = "group";
  double speedup_cap = 0;
  std::string score_speedup = "median";
  EngineFlags engine;
  QueueFlags queue;  // evaluate on workers behind this Redis queue
  bool full_size = false;
};

// A usage problem (exit 2) or a failure of the job (exit 1), with its message.
struct Failure {
  int code;
  std::string message;
};
Failure usage(const std::string& m) { return {kExitUsage, m}; }
Failure failure(const std::string& m) { return {kExitFailure, m}; }

Json task_list_json(const std::vector<tasks::TaskInfo>& list) {
  Json j = Json::array();
  for (const auto& t : list)
    j.push_back({{"id", t.id},
                 {"suite", t.suite},
                 {"family", t.family},
                 {"path", fs::absolute(t.path).string()}});
  return j;
}

Result<std::vector<tasks::TaskInfo>> task_list_from_json(const Json& j) {
  std::vector<tasks::TaskInfo> out;
  if (!j.is_array()) return invalid_argument("config.json: \"tasks\" must be a list");
  for (const auto& t : j) {
    tasks::TaskInfo info;
    KEVIN_ASSIGN_OR_RETURN(info.id, json_get<std::string>(t, "id"));
    KEVIN_ASSIGN_OR_RETURN(info.suite, json_get<std::string>(t, "suite"));
    KEVIN_ASSIGN_OR_RETURN(info.family, json_get<std::string>(t, "family"));
    KEVIN_ASSIGN_OR_RETURN(std::string path, json_get<std::string>(t, "path"));
    info.path = path;
    if (!fs::exists(info.path)) return not_found("task file of " + info.id + " is gone: " + path);
    out.push_back(std::move(info));
  }
  return out;
}

Result<rollout::RolloutConfig> rollout_config(const RunArgs& a) {
  rollout::RolloutConfig c;
  if (!a.allocations.empty() && a.budget == 0)
    return invalid_argument("--allocations needs --budget");
  if (a.budget > 0) {
    if (a.search == "beam") return invalid_argument("--budget and --search beam do not combine");
    c.allocations.clear();
    if (a.allocations.empty()) {
      c.allocations = rollout::budget_allocations(a.budget);
    } else {
      for (const auto& label : split_list({a.allocations})) {
        KEVIN_ASSIGN_OR_RETURN(rollout::Allocation al, rollout::parse_allocation(label));
        if (al.trajectories * al.turns != a.budget) {
          return invalid_argument("allocation " + label + " does not spend the budget of " +
                                  std::to_string(a.budget));
        }
        c.allocations.push_back(al);
      }
    }
  } else {
    c.allocations = {{a.trajectories, a.turns}};
  }
  c.beam = a.search == "beam";
  c.beam_config = {a.beam_width, a.beam_rounds};
  if (c.beam && a.beam_width > a.trajectories)
    return invalid_argument("--beam-width exceeds --trajectories");
  c.generation.temperature = a.temperature;
  c.generation.top_p = a.top_p;
  c.generation.max_tokens = a.max_tokens;
  c.generation.stop = a.stop;
  c.prompt.context_tokens = static_cast<size_t>(a.context_tokens);
  c.gamma = a.gamma;
  c.return_mode = *reward::return_mode_from_name(a.returns);
  c.advantage_mode = *reward::advantage_mode_from_name(a.advantages);
  if (a.speedup_cap > 0) c.score.speedup_cap = a.speedup_cap;
  c.score.speedup_lower_bound = a.score_speedup == "lower";
  c.parallel = a.parallel;
  return c;
}

Result<Json> policy_json(const RunArgs& a) {
  if (!a.policy.empty()) return policy_spec_json(a.policy, a.engine.backend, a.open_think);
  if (a.llm.empty())
    return invalid_argument(
        "give --llm URL (and --model NAME), or --policy scripted:FILE or local:DIR");
  // Asked before anything is created, so a wrong URL or model name is one line, not a run
  // that fails on its first turn.
  KEVIN_ASSIGN_OR_RETURN(std::string model, check_served_model(a.llm, a.model, a.api_key_env));
  return Json{{"kind", "openai"},
              {"url", a.llm},
              {"model", model},
              {"api_key_env", a.api_key_env},
              {"timeout_s", a.request_timeout_s},
              {"max_concurrency", a.max_concurrency}};
}

Result<Json> engine_json(const RunArgs& a) {
  return resolve_engine_json(a.queue.with_queue(a.engine.settings()));
}

std::string default_run_dir() {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  std::ostringstream o;
  o << "runs/" << std::put_time(&local, "%Y%m%d-%H%M%S");
  return o.str();
}

// Generations past which a new run says how many it asks for before it starts.
constexpr size_t kLargeRunGenerations = 1000;

void warn_if_large(size_t tasks, const rollout::RolloutConfig& c) {
  size_t per_task = 0;
  for (const auto& al : c.allocations)
    per_task += static_cast<size_t>(al.trajectories) * static_cast<size_t>(al.turns);
  if (tasks * per_task <= kLargeRunGenerations) return;
  KEVIN_LOG(warn) << "this run asks for up to " << tasks * per_task << " generations (" << tasks
                  << " tasks x " << per_task
                  << " per task); Ctrl-C stops it and kevin run --resume DIR continues it";
}

// A new run: resolves the arguments into RUN_DIR/config.json (what --resume reads back).
Result<fs::path> create_run(const RunArgs& a) {
  KEVIN_ASSIGN_OR_RETURN(auto selected, select_tasks(a.tasks, a.tasks_dir, a.split));
  KEVIN_ASSIGN_OR_RETURN(auto rollout, rollout_config(a));
  KEVIN_ASSIGN_OR_RETURN(Json policy, policy_json(a));
  KEVIN_ASSIGN_OR_RETURN(Json engine, engine_json(a));
  warn_if_large(selected.size(), rollout);
  const fs::path dir = a.out.empty() ? fs::path(default_run_dir()) : fs::path(a.out);
  if (fs::exists(dir / "run.db")) {
    return already_exists(
        dir.string() + " already holds a run; continue it with kevin run --resume " + dir.string());
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return unavailable("cannot create " + dir.string() + ": " + ec.message());
  const Json config = {{"kevin_version", version_string()},
                       {"created_at", static_cast<int64_t>(std::time(nullptr))},
                       {"tasks", task_list_json(selected)},
                       {"policy", policy},
                       {"engine", engine},
                       {"rollout", rollout::to_json(rollout)}};
  KEVIN_RETURN_IF_ERROR(write_file_atomic(dir / "config.json", dump_json(config, 1) + "\n"));
  return dir;
}

Failure as_failure(const Status& s) { return {exit_code_of(s), s.message()}; }

// Tasks the end-of-run summary names one by one; beyond them the report has the rest.
constexpr size_t kSummaryTasks = 20;

// "solved 1/2 tasks" and the best speedup of each task, after a run or an interruption.
void print_summary(const std::vector<rollout::TaskOutcome>& outcomes, std::ostream& out) {
  const size_t solved = static_cast<size_t>(std::count_if(
      outcomes.begin(), outcomes.end(), [](const auto& o) { return o.best_speedup.has_value(); }));
  out << "solved " << solved << "/" << outcomes.size()
      << " tasks (a correct kernel); best speedup per task:\n";
  size_t width = 0;
  for (const auto& o : outcomes) width = std::max(width, o.task.size());
  for (size_t i = 0; i < outcomes.size() && i < kSummaryTasks; ++i) {
    const auto& o = outcomes[i];
    out << "  " << std::left << std::setw(static_cast<int>(width)) << o.task << "  ";
    if (o.best_speedup) {
      out << std::fixed << std::setprecision(2) << *o.best_speedup << "x";
    } else {
      out << (o.turns == 0 ? "- (no turns yet)" : "- (no correct kernel)");
    }
    out << "\n";
  }
  if (outcomes.size() > kSummaryTasks)
    out << "  ... and " << outcomes.size() - kSummaryTasks << " more (see the report)\n";
}

// What a run left: its turns written out (trajectories.jsonl, best/) and each task's outcome.
struct RunOutputs {
  size_t turns = 0;
  std::vector<rollout::TaskOutcome> outcomes;
};

Result<RunOutputs> write_outputs(const rollout::RunStore& store,
                                 const rollout::RolloutConfig& config,
                                 const std::vector<tasks::TaskInfo>& selected, const fs::path& dir,
                                 const std::string& ext) {
  KEVIN_ASSIGN_OR_RETURN(auto scored, rollout::scored_turns(store, config));
  KEVIN_RETURN_IF_ERROR(rollout::write_run_outputs(scored, dir, ext));
  std::vector<std::string> ids;
  for (const auto& t : selected) ids.push_back(t.id);
  return RunOutputs{scored.size(), rollout::task_outcomes(scored, ids)};
}

// The evaluations running now, when the evaluator can say (the local engine).
std::function<int()> running_evaluations(env::Evaluator* evaluator) {
  auto* engine = dynamic_cast<env::EngineEvaluator*>(evaluator);
  if (engine == nullptr) return {};
  return [engine] { return engine->in_flight(); };
}

// Runs (or continues) the run in `dir` to completion, or until `interrupt` is set, and
// writes its outputs from every stored turn. An interrupted run exits 130.
// `check_sizes`: a new run refuses CPU tasks at full size unless `full_size` (a resumed run
// was checked when it started).
std::optional<Failure> execute(const fs::path& dir, const std::atomic<bool>* interrupt,
                               bool check_sizes, bool full_size, std::ostream& out) {
  auto text = read_file(dir / "config.json");
  if (!text.is_ok())
    return usage(dir.string() + " is not a run directory (no readable config.json)");
  auto config = parse_json(*text);
  if (!config.is_ok() || !config->is_object())
    return failure(dir.string() + "/config.json is not valid JSON");
  auto selected = task_list_from_json(config->value("tasks", Json()));
  if (!selected.is_ok()) return as_failure(selected.status());
  auto rollout_cfg = rollout::rollout_config_from_json(config->value("rollout", Json::object()));
  if (!rollout_cfg.is_ok()) return failure("config.json: " + rollout_cfg.status().message());
  auto policy = make_policy(config->value("policy", Json::object()));
  if (!policy.is_ok()) return as_failure(policy.status());
  // Ctrl-C also stops reference preparation: a task's data can take minutes.
  auto evaluator = make_evaluator(config->value("engine", Json::object()), interrupt);
  if (!evaluator.is_ok()) return as_failure(evaluator.status());
  if (check_sizes) {
    const int seeds = config->value("engine", Json::object()).value("seeds", 5);
    for (const auto& t : *selected) {
      if (Status s = check_cpu_call_size(evaluator->get(), t.path, seeds, full_size); !s.is_ok())
        return as_failure(s);
    }
  }
  auto store = rollout::RunStore::open(dir / "run.db");
  if (!store.is_ok()) return failure(store.status().message());

  rollout_cfg->prompt.backend = (*evaluator)->backend();
  rollout_cfg->prompt.device_name = (*evaluator)->device_name();
  rollout_cfg->prompt.format = (*evaluator)->answer_format();
  rollout::Progress progress;
  Status status;
  KEVIN_LOG(info) << "run " << dir.string() << ": " << selected->size() << " tasks, policy "
                  << (*policy)->name() << ", " << (*evaluator)->backend() << " on "
                  << (*evaluator)->device_name();
  {
    rollout::ProgressDisplay display(&progress, ::isatty(STDERR_FILENO) == 1,
                                     std::chrono::seconds(30),
                                     running_evaluations(evaluator->get()));
    rollout::Rollout rollout(*rollout_cfg, policy->get(), evaluator->get(), &*store, &progress);
    status = rollout.run(*selected, interrupt);
  }
  const std::string ext = (*evaluator)->backend() == "cuda" ? "cu" : "cpp";
  const auto written = write_outputs(*store, *rollout_cfg, *selected, dir, ext);
  Status outputs = written.is_ok() ? report::write_metrics_file(dir) : written.status();
  if (status.code() == StatusCode::kCancelled && written.is_ok()) {
    print_summary(written->outcomes, out);
    out << "interrupted: " << written->turns << " turns kept in " << dir.string()
        << " (trajectories.jsonl, best/, metrics.json)\n"
        << "resume with: kevin run --resume " << dir.string() << "\nreport: kevin report "
        << dir.string() << "\n";
    return Failure{kExitInterrupted, ""};
  }
  if (!status.is_ok()) {
    // The run's own failure comes first; the finished turns stay in run.db either way.
    std::string message = status.message() + "\n";
    if (written.is_ok()) message += std::to_string(written->turns) + " finished turns are kept; ";
    if (!outputs.is_ok() && written.is_ok() && written->turns > 0)
      message += "(metrics not written: " + outputs.message() + ") ";
    return failure(message + "continue with: kevin run --resume " + dir.string());
  }
  if (!outputs.is_ok()) return failure("writing outputs: " + outputs.message());
  print_summary(written->outcomes, out);
  out << "run complete: " << written->turns << " turns in " << dir.string()
      << " (trajectories.jsonl, best/, metrics.json)\n"
      << "report: kevin report " << dir.string() << "\n";
  return std::nullopt;
}

}  // namespace

void add_run_command(CLI::App& app, Action& action) {
  auto a = std::make_shared<RunArgs>();
  CLI::App* sub = app.add_subcommand(
      "run", "optimise tasks with a model over several turns (multi-turn rollouts)");
  sub->footer(
      "Examples:\n"
      "  kevin run --tasks level1/028_gelu,level1/051_sum_dim1 --llm http://127.0.0.1:8000/v1 -m 4 "
      "-n 4\n"
      "  kevin run --tasks level1 --split holdout --llm http://127.0.0.1:8000/v1 --budget 128\n"
      "  kevin run --resume runs/20261204-101500   (after Ctrl-C or a crash)");
  sub->add_option(
      "--tasks", a->tasks,
      "tasks: suite names, task ids, .py files or task folders (comma-separated or repeated)");
  sub->add_option("--tasks-dir", a->tasks_dir,
                  "folder of suites that names refer to (default: the shipped tasks/)");
  sub->add_option("--split", a->split, "keep only the train or holdout tasks")
      ->check(CLI::IsMember({"train", "holdout"}));
  sub->add_option("--trajectories,-m", a->trajectories, "parallel trajectories per task")
      ->check(CLI::Range(1, 4096));
  sub->add_option("--turns,-n", a->turns, "turns per trajectory")->check(CLI::Range(1, 256));
  sub->add_option("--budget", a->budget,
                  "compare allocations of this many kernels per task (16x8, 32x4, 128x1 for 128)")
      ->check(CLI::Range(1, 100000));
  sub->add_option("--allocations", a->allocations,
                  "with --budget: the allocations to compare, e.g. 16x8,32x4,128x1");
  sub->add_option("--search", a->search,
                  "none, or beam (keep the best trajectories after each round of turns)")
      ->check(CLI::IsMember({"none", "beam"}));
  sub->add_option("--beam-width", a->beam_width, "beam: trajectories kept after each round")
      ->check(CLI::Range(1, 4096));
  sub->add_option("--beam-rounds", a->beam_rounds, "beam: rounds of --turns turns")
      ->check(CLI::Range(1, 1000));
  sub->add_option("--llm", a->llm, "OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1");
  sub->add_option("--model", a->model,
                  "model name sent to the server (default: the only model the server lists)");
  sub->add_option("--api-key-env", a->api_key_env, "environment variable holding the API key");
  sub->add_option("--policy", a->policy,
                  "instead of --llm: scripted:FILE (answers from a JSONL script) or "
                  "local:MODEL_DIR (an HF Qwen2 folder run in-process)");
  sub->add_flag("--open-think", a->open_think,
                "local model: open the answer inside <think> (QwQ's chat template)");
  sub->add_option("--temperature", a->temperature, "sampling temperature")
      ->check(CLI::Range(0.0, 5.0));
  sub->add_option("--top-p", a->top_p, "nucleus sampling")->check(CLI::Range(0.0, 1.0));
  sub->add_option("--max-tokens", a->max_tokens, "tokens per response")
      ->check(CLI::Range(1, 1 << 22));
  sub->add_option("--stop", a->stop, "stop sequence (repeatable)");
  sub->add_option("--request-timeout", a->request_timeout_s, "seconds one generation may take")
      ->check(CLI::PositiveNumber);
  sub->add_option("--max-concurrency", a->max_concurrency, "generation requests in flight")
      ->check(CLI::Range(1, 4096));
  sub->add_option("--context-tokens", a->context_tokens,
                  "prompt budget; oldest turns are dropped beyond it")
      ->check(CLI::Range(1000, 1 << 22));
  sub->add_option("--parallel", a->parallel, "trajectories advancing at once")
      ->check(CLI::Range(1, 4096));
  sub->add_option("--gamma", a->gamma, "discount of the returns")->check(CLI::Range(0.0, 1.0));
  sub->add_option("--returns", a->returns, "sum or max")->check(CLI::IsMember({"sum", "max"}));
  sub->add_option("--advantages", a->advantages, "group, per_turn or leave_one_out")
      ->check(CLI::IsMember({"group", "per_turn", "leave_one_out"}));
  sub->add_option("--speedup-cap", a->speedup_cap, "cap speedups in scores (0: off)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--score-speedup", a->score_speedup,
                  "the speedup scored: median (the ratio of medians) or lower (the low end of "
                  "its 95% interval: no reward for a lucky measurement)")
      ->check(CLI::IsMember({"median", "lower"}));
  add_engine_flags(sub, &a->engine,
                   "answers: kevin (C ABI; default), kernelbench (ModelNew + load_inline, "
                   "KernelBench's prompt style), auto (kevin's prompts, either format judged)");
  sub->add_flag("--full-size", a->full_size,
                "on the CPU backend, run tasks without reduced CPU sizes (KernelBench files) at "
                "full size even when large");
  add_queue_options(sub, &a->queue);
  sub->add_option("--out", a->out, "run directory (default runs/<date-time>)");
  sub->add_option("--resume", a->resume,
                  "continue the run in this directory (its config.json decides everything)");
  sub->callback([a, sub, &action] {
    action = [a, sub](std::ostream& out, std::ostream& err) {
      const std::atomic<bool>* interrupt = watch_interrupts(
          "kevin run", "interrupted: stopping; turns being judged are finished and stored");
      fs::path dir;
      if (!a->resume.empty()) {
        for (const CLI::Option* o : sub->get_options()) {
          if (o->count() > 0 && o->get_name() != "--resume") {
            err << "kevin run: --resume takes every setting from the run's config.json; drop "
                << o->get_name() << "\n";
            return kExitUsage;
          }
        }
        dir = a->resume;
      } else {
        if (a->tasks.empty()) {
          err << "kevin run: give --tasks (or --resume RUN_DIR); see kevin run --help\n";
          return kExitUsage;
        }
        auto created = create_run(*a);
        if (!created.is_ok()) {
          const Failure f = as_failure(created.status());
          err << "kevin run: " << f.message << "\n";
          return f.code;
        }
        dir = *created;
      }
      if (auto f = execute(dir, interrupt, a->resume.empty(), a->full_size, out)) {
        if (!f->message.empty()) err << "kevin run: " << f->message << "\n";
        return f->code;
      }
      return kExitOk;
    };
  });
}

}  // namespace kevin::cli
