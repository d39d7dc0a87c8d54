// train_command.cpp — `kevin train --config FILE.json`: resolves the config's task selections
// and engine, then runs the trainer (src/train) into the config's output folder; running it
// again on the same folder resumes from the last checkpoint. Wiring only.
#include <CLI/CLI.hpp>

#include <ostream>

#include "cli/app.h"

#if defined(KEVIN_HAVE_TRAIN)
#include "cli/interrupt.h"
#include "cli/run_setup.h"
#include "core/file.h"
#include "train/trainer.h"
#endif

namespace kevin::cli {

#if defined(KEVIN_HAVE_TRAIN)
namespace {

struct TrainArgs {
  std::string config;
  int steps = 0;
};

// "tasks" / "holdout_tasks" may be one string or a list of them.
Result<std::vector<std::string>> task_specs(const Json& j, const char* key, const Json& fallback) {
  const Json& value = j.contains(key) ? j[key] : fallback;
  if (value.is_string()) return std::vector<std::string>{value.get<std::string>()};
  if (value.is_array() && !value.empty() && std::all_of(value.begin(), value.end(), [](const Json& v) { return v.is_string(); })) {
    return value.get<std::vector<std::string>>();
  }
  return invalid_argument(std::string("\"") + key + "\" must be a task selection: a string or a list of strings");
}

Status resolve_tasks(const Json& j, train::TrainerOptions& o) {
  if (!j.contains("tasks")) return invalid_argument("missing field \"tasks\" (suites, task ids, files or folders)");
  KEVIN_ASSIGN_OR_RETURN(std::vector<std::string> specs, task_specs(j, "tasks", Json()));
  KEVIN_ASSIGN_OR_RETURN(std::string dir, json_get_or<std::string>(j, "tasks_dir", ""));
  KEVIN_ASSIGN_OR_RETURN(std::string split, json_get_or<std::string>(j, "split", "train"));
  auto train = select_tasks(specs, dir, split);
  if (!train.is_ok()) return Status(train.status().code(), "training tasks: " + train.status().message());
  o.train_tasks = *train;
  if (o.holdout_every == 0) return Status::ok();
  KEVIN_ASSIGN_OR_RETURN(std::vector<std::string> held, task_specs(j, "holdout_tasks", j["tasks"]));
  KEVIN_ASSIGN_OR_RETURN(std::string held_split, json_get_or<std::string>(j, "holdout_split", "holdout"));
  auto holdout = select_tasks(held, dir, held_split);
  if (!holdout.is_ok()) return Status(holdout.status().code(), "holdout tasks: " + holdout.status().message());
  o.holdout_tasks = *holdout;
  return Status::ok();
}

// Usage problems (a bad config) exit 2; failures of the job exit 1.
int report(std::ostream& err, const Status& s) {
  err << "kevin train: " << s.message() << "\n";
  const bool use = s.code() == StatusCode::kInvalidArgument || s.code() == StatusCode::kNotFound ||
                   s.code() == StatusCode::kAlreadyExists;
  return use ? kExitUsage : kExitFailure;
}

int run_train(const TrainArgs& a, std::ostream& out, std::ostream& err) {
  // Before any thread starts, so that every one leaves the signals to the watch.
  const std::atomic<bool>* interrupt =
      watch_interrupts("kevin train", "interrupted: stopping after the turns being judged; the last finished step is kept");
  auto text = read_file(a.config);
  if (!text.is_ok()) return report(err, Status(StatusCode::kNotFound, "cannot read the config: " + text.status().message()));
  auto config = parse_json(*text);
  if (!config.is_ok()) return report(err, invalid_argument(a.config + ": " + config.status().message()));
  if (a.steps > 0) (*config)["steps"] = a.steps;
  auto options = train::trainer_options_from_json(*config);
  if (!options.is_ok()) return report(err, invalid_argument(a.config + ": " + options.status().message()));
  if (const Status s = resolve_tasks(*config, *options); !s.is_ok()) return report(err, s);
  auto engine = resolve_engine_json(config->value("engine", Json::object()));
  if (!engine.is_ok()) return report(err, invalid_argument(a.config + ": " + engine.status().message()));
  auto evaluator = make_evaluator(*engine);
  if (!evaluator.is_ok()) return report(err, evaluator.status());
  const std::string out_dir = options->out_dir.string();
  const int steps = options->steps;
  auto trainer = train::Trainer::create(std::move(*options), evaluator->get());
  if (!trainer.is_ok()) return report(err, trainer.status());
  if ((*trainer)->next_step() > 0) err << "kevin train: resuming " << out_dir << " at step " << (*trainer)->next_step() + 1 << "\n";
  const Status ran = (*trainer)->run(err, interrupt);
  if (ran.code() == StatusCode::kCancelled) {
    err << "kevin train: " << ran.message() << "\nresume with: kevin train --config " << a.config << "\n";
    return kExitInterrupted;
  }
  if (const Status& s = ran; !s.is_ok()) {
    err << "kevin train: " << s.message() << "\nthe last checkpoint is kept; continue with: kevin train --config " << a.config << "\n";
    return kExitFailure;
  }
  out << "training complete: " << steps << " steps in " << out_dir << " (train_log.jsonl, checkpoints/, export/)\n"
      << "report: kevin report " << out_dir << "\n";
  return kExitOk;
}

}  // namespace

void add_train_command(CLI::App& app, Action& action) {
  auto a = std::make_shared<TrainArgs>();
  CLI::App* sub = app.add_subcommand("train", "train a policy with multi-turn GRPO (in-process Qwen2 model)");
  sub->add_option("--config", a->config, "training config (JSON; docs/trainer.md lists its keys)")->required();
  sub->add_option("--steps", a->steps, "override the config's step count (also when resuming)")->check(CLI::Range(1, 1 << 24));
  sub->callback([a, &action] {
    action = [a](std::ostream& out, std::ostream& err) { return run_train(*a, out, err); };
  });
}
#else
void add_train_command(CLI::App& app, Action& action) {
  add_unavailable_command(app, action, "train", "train a policy with multi-turn GRPO",
                          "this kevin was built without libtorch; configure with PyTorch's CMake prefix");
}
#endif

}  // namespace kevin::cli
