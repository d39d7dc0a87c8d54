// train_command.cpp — `kevin train --config FILE.json`: resolves the config's task selections
// and engine, then runs the trainer (src/train) into the config's output folder; running it
// again on the same folder resumes from the last checkpoint. Wiring only.
#include <CLI/CLI.hpp>

#include <iomanip>
#include <ostream>
#include <sstream>

#include "cli/app.h"

#if defined(KEVIN_HAVE_TRAIN)
#include "cli/interrupt.h"
#include "cli/run_setup.h"
#include "core/file.h"
#include "sys/cuda_probe.h"
#include "train/model/qwen2_config.h"
#include "train/trainer/trainer.h"
#endif

namespace kevin::cli {

#if defined(KEVIN_HAVE_TRAIN)
namespace {
namespace fs = std::filesystem;

struct TrainArgs {
  std::string config;
  int steps = 0;
  bool print_config = false, dry_run = false;
};

// "tasks" / "holdout_tasks" may be one string or a list of them.
Result<std::vector<std::string>> task_specs(const Json& j, const char* key, const Json& fallback) {
  const Json& value = j.contains(key) ? j[key] : fallback;
  if (value.is_string()) return std::vector<std::string>{value.get<std::string>()};
  if (value.is_array() && !value.empty() &&
      std::all_of(value.begin(), value.end(), [](const Json& v) { return v.is_string(); })) {
    return value.get<std::vector<std::string>>();
  }
  return invalid_argument(std::string("\"") + key +
                          "\" must be a task selection: a string or a list of strings");
}

Status resolve_tasks(const Json& j, train::TrainerOptions& o) {
  if (!j.contains("tasks"))
    return invalid_argument("missing field \"tasks\" (suites, task ids, files or folders)");
  KEVIN_ASSIGN_OR_RETURN(std::vector<std::string> specs, task_specs(j, "tasks", Json()));
  KEVIN_ASSIGN_OR_RETURN(std::string dir, json_get_or<std::string>(j, "tasks_dir", ""));
  KEVIN_ASSIGN_OR_RETURN(std::string split, json_get_or<std::string>(j, "split", "train"));
  auto train = select_tasks(specs, dir, split);
  if (!train.is_ok())
    return Status(train.status().code(), "training tasks: " + train.status().message());
  o.train_tasks = *train;
  if (o.holdout_every == 0) return Status::ok();
  KEVIN_ASSIGN_OR_RETURN(std::vector<std::string> held, task_specs(j, "holdout_tasks", j["tasks"]));
  KEVIN_ASSIGN_OR_RETURN(std::string held_split,
                         json_get_or<std::string>(j, "holdout_split", "holdout"));
  auto holdout = select_tasks(held, dir, held_split);
  if (!holdout.is_ok())
    return Status(holdout.status().code(), "holdout tasks: " + holdout.status().message());
  o.holdout_tasks = *holdout;
  return Status::ok();
}

// Usage problems (a bad config) exit 2; failures of the job exit 1.
int report(std::ostream& err, const Status& s) { return report_failure(err, "train", s); }

// The config file resolved: trainer options (tasks included) and the engine's settings.
struct ResolvedConfig {
  Json given;
  train::TrainerOptions options;
  Json engine;
};

Result<ResolvedConfig> resolve_config(const TrainArgs& a) {
  auto text = read_file(a.config);
  if (!text.is_ok()) return not_found("cannot read the config: " + text.status().message());
  auto config = parse_json(*text);
  if (!config.is_ok()) return invalid_argument(a.config + ": " + config.status().message());
  if (!config->is_object())
    return invalid_argument(a.config + ": expected a JSON object (docs/trainer.md lists its keys)");
  if (a.steps > 0) (*config)["steps"] = a.steps;
  auto options = train::trainer_options_from_json(*config);
  if (!options.is_ok()) return invalid_argument(a.config + ": " + options.status().message());
  KEVIN_RETURN_IF_ERROR(resolve_tasks(*config, *options));
  auto engine = resolve_engine_json(config->value("engine", Json::object()));
  if (!engine.is_ok()) return invalid_argument(a.config + ": " + engine.status().message());
  return ResolvedConfig{*config, std::move(*options), *engine};
}

// Every key with the value training would use: what --print-config prints (a valid config).
Json printed_config(const ResolvedConfig& c) {
  Json j = train::to_json(c.options);
  for (const auto& key : train::kCallerConfigKeys) {
    if (c.given.contains(key)) j[key] = c.given[key];
  }
  j["engine"] = c.engine;
  return j;
}

std::string gib(double v) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(v < 10 ? 2 : 1) << v << " GiB";
  return o.str();
}

// The model folder as the trainer will load it: a Qwen2 config, weights and a tokenizer.
Result<train::Qwen2Config> check_model_folder(const fs::path& dir) {
  if (!fs::is_directory(dir))
    return not_found("model folder " + dir.string() +
                     " does not exist (an HF folder: config.json, *.safetensors, tokenizer.json)");
  auto config = train::load_qwen2_config(dir);
  if (!config.is_ok())
    return Status(config.status().code(), dir.string() + ": " + config.status().message());
  if (!fs::exists(dir / "tokenizer.json"))
    return not_found(dir.string() + " has no tokenizer.json");
  bool weights = false;
  for (const auto& entry : fs::directory_iterator(dir))
    weights |= entry.path().extension() == ".safetensors";
  if (!weights) return not_found(dir.string() + " has no *.safetensors weights");
  return config;
}

// The engine as a dry run sees it; a CUDA engine on a machine without a GPU is said to fail
// (unless the queue's workers judge).
std::string engine_line(const Json& engine) {
  if (engine.value("fake", false)) return "fake (no kernels are run)";
  const std::string backend = engine.value("backend", std::string("?"));
  if (!engine.value("queue", std::string()).empty())
    return backend + " (the queue's workers judge)";
  if (backend == "cuda" && sys::cuda_device_count() == 0)
    return "cuda (this machine has no CUDA device: training here would fail)";
  return backend;
}

// The dry run's memory table: model state, then each phase's own part and its total (the
// update and generation hold their memory in turn, never together).
std::string memory_lines(const train::MemoryEstimate& m, const train::Workload& w,
                         const train::TrainerOptions& o) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(1);
  out << "memory:  per replica (" << (w.base_bytes == 2 ? "bf16" : "fp32") << " base weights, "
      << (o.lora.rank > 0 ? "LoRA rank " + std::to_string(o.lora.rank)
                          : std::string("full fine-tuning"))
      << ", " << static_cast<double>(m.trainable) / 1e6 << "M trainable)\n"
      << "         model state: weights " << gib(m.weights_gib) << ", gradients "
      << gib(m.gradients_gib) << ", AdamW "
      << (w.optimizer_on_host ? "in host memory" : gib(m.optimizer_gib)) << " = "
      << gib(m.state_gib()) << "\n"
      << (w.optimizer_on_host ? "         host memory: AdamW's moments " +
                                    gib(m.host_optimizer_gib) + " (pinned), per replica\n"
                              : std::string())
      << "         update: activations " << gib(m.activations_gib) << " ("
      << (w.checkpointing ? "layer checkpoints" : "every layer kept, no checkpoints") << ", "
      << w.micro_batch_tokens << "-token micro-batch), logits " << gib(m.logits_gib) << " ("
      << (w.logit_chunk_rows > 0 ? std::to_string(w.logit_chunk_rows) + "-row chunks"
                                 : std::string("unchunked"))
      << ") -> " << gib(m.update_gib()) << "\n"
      << "         generation: KV cache " << gib(m.kv_cache_gib) << " (" << w.generation_sequences
      << " sequences of up to " << w.generation_tokens << " tokens) -> " << gib(m.generation_gib())
      << "\n"
      << "         peak " << gib(m.peak_gib())
      << " before the CUDA context, allocator slack and the evaluator's share\n";
  return out.str();
}

// What a run will do, from its options and the model folder's config: the model, tasks,
// step shape, engine, memory table and out folder. The dry run prints it, and a real run
// prints it before it starts; a prompt budget plus longest answer past the model's positions
// ends it with a warning line. Errors: the model folder's.
Result<std::string> run_summary(const ResolvedConfig& c) {
  const train::TrainerOptions& o = c.options;
  KEVIN_ASSIGN_OR_RETURN(train::Qwen2Config model, check_model_folder(o.model_dir));
  const Status fits = train::check_context_fits(o, model);
  // Sized for the GPU it would train on; "cpu" runs in fp32 there.
  const torch::Device device = o.device == "cpu" ? torch::kCPU : torch::kCUDA;
  const train::Workload w = train::workload_of(o, device);
  const train::MemoryEstimate m = train::estimate_memory(model, o.lora, w);
  const auto& al = o.rollout.allocations.front();
  std::ostringstream out;
  out << "model:   " << o.model_dir.string() << " (Qwen2, " << std::fixed << std::setprecision(2)
      << static_cast<double>(m.parameters) / 1e9 << "B parameters: " << model.num_hidden_layers
      << " layers, hidden " << model.hidden_size << ", vocab " << model.vocab_size << ")\n"
      << "tasks:   " << o.train_tasks.size() << " for training, " << o.holdout_tasks.size()
      << " held out\n"
      << "step:    " << o.tasks_per_step << " tasks x " << al.label()
      << " (trajectories x turns) = " << o.tasks_per_step * al.trajectories * al.turns
      << " generations, then " << o.update.optimizer_steps << " optimizer step(s)"
      << (o.step_samples == train::StepSamples::kSplit && o.update.optimizer_steps > 1
              ? " on disjoint shares of them"
              : "")
      << "; " << o.steps << " steps\n"
      << "engine:  " << engine_line(c.engine) << "\n"
      << memory_lines(m, w, o) << "out:     " << o.out_dir.string()
      << (fs::exists(o.out_dir / "train_config.json") ? " (holds a run: it resumes)" : " (new)")
      << "\n";
  if (!fits.is_ok()) out << "warning: " << fits.message() << "\n";
  return out.str();
}

// --dry-run: everything training needs is checked and sized; nothing is trained or written.
int dry_run(const ResolvedConfig& c, std::ostream& out, std::ostream& err) {
  auto summary = run_summary(c);
  if (!summary.is_ok()) return report(err, summary.status());
  out << *summary
      << "dry run: the config, model folder and tasks are usable; nothing was trained\n";
  return kExitOk;
}

int run_train(const TrainArgs& a, std::ostream& out, std::ostream& err) {
  const std::atomic<bool>* interrupt = watch_interrupts(
      "kevin train",
      "interrupted: stopping after the turns being judged; the last finished step is kept");
  auto resolved = resolve_config(a);
  if (!resolved.is_ok()) return report(err, resolved.status());
  if (a.print_config) {
    out << dump_json(printed_config(*resolved), 2) << "\n";
    return kExitOk;
  }
  if (a.dry_run) return dry_run(*resolved, out, err);
  auto summary = run_summary(*resolved);
  if (!summary.is_ok()) return report(err, summary.status());
  err << *summary;
  auto evaluator = make_evaluator(resolved->engine);
  if (!evaluator.is_ok()) return report(err, evaluator.status());
  const fs::path out_dir = resolved->options.out_dir;
  const int steps = resolved->options.steps;
  const Json every_key = printed_config(*resolved);
  auto trainer = train::Trainer::create(std::move(resolved->options), evaluator->get());
  if (!trainer.is_ok()) return report(err, trainer.status());
  // train_config.json keeps the keys as given (what a resume compares); this file every key
  // with the value the run uses, defaults included.
  if (Status kept =
          write_file_atomic(out_dir / "train_config.resolved.json", dump_json(every_key, 2) + "\n");
      !kept.is_ok()) {
    return report(err, kept);
  }
  if ((*trainer)->next_step() > 0)
    err << "kevin train: resuming " << out_dir.string() << " at step "
        << (*trainer)->next_step() + 1 << "\n";
  const Status ran = (*trainer)->run(err, interrupt);
  if (ran.code() == StatusCode::kCancelled) {
    err << "kevin train: " << ran.message() << "\nresume with: kevin train --config " << a.config
        << "\n";
    return kExitInterrupted;
  }
  if (!ran.is_ok()) {
    err << "kevin train: " << ran.message()
        << "\nthe last checkpoint is kept; continue with: kevin train --config " << a.config
        << "\n";
    return kExitFailure;
  }
  out << "training complete: " << steps << " steps in " << out_dir.string()
      << " (train_log.jsonl, checkpoints/, export/)\n"
      << "report: kevin report " << out_dir.string() << "\n";
  return kExitOk;
}

}  // namespace

void add_train_command(CLI::App& app, Action& action) {
  auto a = std::make_shared<TrainArgs>();
  CLI::App* sub =
      app.add_subcommand("train", "train a policy with multi-turn GRPO (in-process Qwen2 model)");
  sub->footer(
      "Examples:\n"
      "  kevin train --config examples/train/cpu-smoke.json   (after build/bench/tiny_model "
      "build/tiny-model)\n"
      "  kevin train --config examples/train/qwen2.5-coder-7b-lora-h200.json --dry-run\n"
      "  kevin train --config train.json --steps 300   (extends a finished run; the same command "
      "resumes)");
  sub->add_option("--config", a->config, "training config (JSON; docs/trainer.md lists its keys)")
      ->required();
  sub->add_option("--steps", a->steps, "override the config's step count (also when resuming)")
      ->check(CLI::Range(1, 1 << 24));
  sub->add_flag("--print-config", a->print_config,
                "print the config with every default filled in, then exit");
  sub->add_flag("--dry-run", a->dry_run,
                "check the model folder (Qwen2 architecture, weights, tokenizer), resolve the "
                "tasks, estimate memory; train nothing");
  sub->callback([a, &action] {
    action = [a](std::ostream& out, std::ostream& err) { return run_train(*a, out, err); };
  });
}
#else
void add_train_command(CLI::App& app, Action& action) {
  add_unavailable_command(
      app, action, "train", "train a policy with multi-turn GRPO",
      "this kevin was built without libtorch; `make build` in kevin's source folder installs "
      "libtorch-dev and rebuilds (or configure with PyTorch's CMake prefix)");
}
#endif

}  // namespace kevin::cli
