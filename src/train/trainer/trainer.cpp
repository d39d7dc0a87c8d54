// trainer.cpp — the training loop: per-step task draw, rollouts with the in-process policy
// into out/rollouts/step-N (a run folder kevin report reads), GRPO samples from the stored
// turns, AdamW with warm-up, metrics to train_log.jsonl, holdout rollouts, checkpoints
// (trainable weights, optimizer state, step counters) and the exports.
#include "train/trainer/trainer.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <initializer_list>
#include <optional>
#include <random>
#include <sstream>

#include "core/file.h"
#include "core/version.h"
#include "rollout/progress.h"
#include "rollout/records.h"
#include "train/grpo/fused_adamw.h"
#include "train/io/model_io.h"
#include "train/io/safetensors.h"
#include "train/model/precision.h"
#include "train/parallel/collective.h"
#include "train/sampling/local_policy.h"

namespace kevin::train {
namespace fs = std::filesystem;
using Turns = std::vector<rollout::ScoredTurn>;

namespace {

constexpr const char* kLogFile = "train_log.jsonl";
constexpr const char* kStateFile = "trainer_state.json";
constexpr const char* kWeightsFile = "trainable.safetensors";
constexpr const char* kOptimizerFile = "optimizer.pt";

std::string step_name(int step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "step-%06d", step);
  return buf;
}

// `config` with `keys` of its section `section` removed, and the section too once empty (as if
// it had never been given).
void erase_in_section(Json& config, const char* section, std::initializer_list<const char*> keys) {
  if (!config.contains(section) || !config[section].is_object()) return;
  Json& part = config[section];
  for (const char* key : keys) part.erase(key);
  if (part.empty()) config.erase(section);
}

// `config` without the keys a resumed run may change: how long, on how many devices (the
// update is the same), the response limit (the paper raised it mid-run by restarting), and
// where the optimizer's moments live (the same numbers, in another memory).
Json without_resumable_keys(Json config) {
  if (!config.is_object()) return config;
  for (const char* key : {"steps", "gpus", "cpu_replicas"}) config.erase(key);
  erase_in_section(config, "rollout", {"max_tokens", "max_tokens_schedule"});
  erase_in_section(config, "optimizer", {"state_on_host"});
  return config;
}

// The step number of a "step-NNNNNN" folder name, or -1.
int step_of(const std::string& name) {
  if (name.size() != 11 || name.rfind("step-", 0) != 0) return -1;
  int step = 0;
  for (char c : name.substr(5)) {
    if (c < '0' || c > '9') return -1;
    step = step * 10 + (c - '0');
  }
  return step;
}

// A seed for `step` of one phase (`salt`): a resumed run draws what the uninterrupted one did.
uint64_t step_seed(uint64_t seed, int step, uint64_t salt) {
  constexpr uint64_t kMultiplier = 1000003;
  return seed * kMultiplier + salt + static_cast<uint64_t>(step);
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The tasks of `step`: a draw without repeats that depends only on (seed, step), so a resumed
// run sees the tasks the uninterrupted one would have.
std::vector<tasks::TaskInfo> tasks_for_step(const std::vector<tasks::TaskInfo>& all, int count,
                                            uint64_t seed, int step) {
  std::vector<size_t> order(all.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::mt19937_64 rng(step_seed(seed, step, 0));
  std::shuffle(order.begin(), order.end(), rng);
  order.resize(std::min(order.size(), static_cast<size_t>(count)));
  std::sort(order.begin(), order.end());
  std::vector<tasks::TaskInfo> out;
  for (size_t i : order) out.push_back(all[i]);
  return out;
}

Json mean_or_null(double sum, size_t count) {
  return count == 0 ? Json() : Json(sum / static_cast<double>(count));
}

// Whether a completion opens the way `prefix` says (after whitespace and an opening <think>).
bool opens_with(const Tokenizer& tokenizer, const std::vector<int32_t>& completion,
                const std::string& prefix) {
  const size_t head = std::min<size_t>(completion.size(), 32);
  std::string text = tokenizer.decode(std::span<const int32_t>(completion.data(), head), false);
  const auto skip_space = [&] {
    text.erase(0, std::min(text.size(), text.find_first_not_of(" \t\r\n")));
  };
  skip_space();
  if (text.rfind("<think>", 0) == 0) text.erase(0, 7);
  skip_space();
  return text.rfind(prefix, 0) == 0;
}

// What one rollout did (what the paper plotted per step; docs/trainer.md, "train_log.jsonl").
Json rollout_metrics(const Turns& turns, const Tokenizer& tokenizer,
                     const std::string& not_okay_prefix) {
  double reward = 0, correct = 0, speedup = 0, tokens = 0, clipped = 0, not_okay = 0;
  size_t speedups = 0, with_ids = 0;
  for (const rollout::ScoredTurn& t : turns) {
    reward += t.score;
    correct += t.correct ? 1 : 0;
    if (t.speedup) {
      speedup += *t.speedup;
      ++speedups;
    }
    tokens += static_cast<double>(t.completion_tokens);
    clipped += t.finish_reason == "length" ? 1 : 0;
    if (t.has_tokens) {
      ++with_ids;
      not_okay += opens_with(tokenizer, t.completion_token_ids, not_okay_prefix) ? 0 : 1;
    }
  }
  const size_t n = turns.size();
  return {{"turns", n},
          {"reward_mean", mean_or_null(reward, n)},
          {"correct_rate", mean_or_null(correct, n)},
          {"speedup_mean", mean_or_null(speedup, speedups)},
          {"response_tokens_mean", mean_or_null(tokens, n)},
          {"clip_ratio", mean_or_null(clipped, n)},
          {"not_okay_ratio", not_okay_prefix.empty() ? Json() : mean_or_null(not_okay, with_ids)}};
}

// The stored turns as GRPO samples: the exact tokens the policy produced, its log-probabilities
// and the turn's advantage. Turns without tokens (a policy that does not report them) are an
// error: the trainer cannot learn from text alone.
Result<std::vector<Sample>> samples_of(const Turns& turns) {
  std::vector<Sample> samples;
  for (const rollout::ScoredTurn& t : turns) {
    if (!t.has_tokens) {
      return failed_precondition("turn " + t.key.task + " #" + std::to_string(t.key.trajectory) +
                                 "/" + std::to_string(t.key.turn) +
                                 " has no token ids (not sampled in process)");
    }
    Sample s;
    s.prompt = t.prompt_token_ids;
    s.completion = t.completion_token_ids;
    s.old_logprobs = t.logprobs;
    s.advantage = t.advantage;
    if (!s.prompt.empty() && !s.completion.empty()) samples.push_back(std::move(s));
  }
  return samples;
}

// Appends one line; the log is never rewritten except by truncate_log on resume.
Status append_line(const fs::path& file, const Json& line) {
  std::ofstream out(file, std::ios::app | std::ios::binary);
  out << dump_json(line) << '\n';
  out.flush();
  if (!out) return io_error("cannot append to " + file.string());
  return Status::ok();
}

// Drops log lines of steps after the first `done` (1-based "step": work a resumed run redoes).
Status truncate_log(const fs::path& file, int done) {
  if (!fs::exists(file)) return Status::ok();
  KEVIN_ASSIGN_OR_RETURN(std::string text, read_file(file));
  std::string kept;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    // A line cut short by a crash mid-append does not parse; it belongs to redone work.
    const auto parsed = parse_json(line);
    if (parsed.is_ok() && parsed->is_object() && parsed->value("step", done + 1) <= done)
      kept += line + "\n";
  }
  return write_file_atomic(file, kept);
}

// Removes out/<kind>/step-N for every step N after the first `done` (N is 1-based).
void remove_steps_after(const fs::path& dir, int done) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const int step = step_of(entry.path().filename().string());
    if (step > done) fs::remove_all(entry.path(), ec);
  }
}

struct CheckpointState {
  int next_step = 0;
  int64_t optimizer_steps = 0;
  std::optional<int64_t> warmup_steps;  // absent in checkpoints older than warmup_ratio
  fs::path dir;
};

// The newest complete checkpoint under out/checkpoints (complete: its state file exists).
std::optional<CheckpointState> latest_checkpoint(const fs::path& out_dir) {
  std::optional<CheckpointState> best;
  std::error_code ec;
  if (!fs::is_directory(out_dir / "checkpoints", ec)) return best;
  for (const auto& entry : fs::directory_iterator(out_dir / "checkpoints", ec)) {
    if (step_of(entry.path().filename().string()) < 0) continue;
    auto text = read_file(entry.path() / kStateFile);
    if (!text.is_ok()) continue;
    auto state = parse_json(*text);
    if (!state.is_ok()) continue;
    CheckpointState c{state->value("next_step", 0), state->value("optimizer_steps", int64_t{0}),
                      std::nullopt, entry.path()};
    if (state->contains("warmup_steps") && (*state)["warmup_steps"].is_number_integer())
      c.warmup_steps = (*state)["warmup_steps"].get<int64_t>();
    if (!best || c.next_step > best->next_step) best = c;
  }
  return best;
}

}  // namespace

std::vector<std::vector<size_t>> step_batches(size_t samples, int steps, StepSamples mode,
                                              uint64_t seed) {
  std::vector<size_t> order(samples);
  for (size_t i = 0; i < samples; ++i) order[i] = i;
  if (mode == StepSamples::kWholeBatch)
    return std::vector<std::vector<size_t>>(static_cast<size_t>(std::max(steps, 1)), order);
  // Shuffled, so that every step mixes the batch's tasks (the stored order groups them).
  std::mt19937_64 rng(seed);
  std::shuffle(order.begin(), order.end(), rng);
  const size_t parts = std::min(samples, static_cast<size_t>(std::max(steps, 1)));
  std::vector<std::vector<size_t>> out;
  size_t begin = 0;
  for (size_t p = 0; p < parts; ++p) {
    const size_t size = samples / parts + (p < samples % parts ? 1 : 0);
    std::vector<size_t> part(order.begin() + static_cast<std::ptrdiff_t>(begin),
                             order.begin() + static_cast<std::ptrdiff_t>(begin + size));
    // Ascending keeps a trajectory's turns (similar prompts) in one micro-batch: less padding.
    std::sort(part.begin(), part.end());
    out.push_back(std::move(part));
    begin += size;
  }
  return out;
}

// One copy of the model on one device with its optimizer. Replicas start equal and take the
// same steps on the same summed gradients, so they stay equal.
struct Replica {
  torch::Device device{torch::kCPU};
  Qwen2ForCausalLM model{nullptr};
  std::unique_ptr<FusedAdamW> adam;
};

struct Trainer::Impl {
  TrainerOptions o;
  env::Evaluator* evaluator = nullptr;
  std::vector<Replica> replicas;      // [0] is the one checkpoints and exports read
  std::unique_ptr<Collective> group;  // null with one replica
  bool bf16 = false;
  std::unique_ptr<Tokenizer> tokenizer;
  int next_step = 0;
  int64_t optimizer_steps = 0;
  int64_t warmup_steps = 0;  // the run's, fixed when it started (kept in checkpoints)
  const std::atomic<bool>* interrupt = nullptr;  // run()'s, borrowed

  Qwen2ForCausalLM& model() { return replicas.front().model; }
  const Qwen2ForCausalLM& model() const { return replicas.front().model; }
  bool on_cuda() const { return replicas.front().device.is_cuda(); }

  Result<std::vector<torch::Device>> choose_devices() const {
    const bool cuda = torch::cuda::is_available();
    if (o.device == "cuda" && !cuda)
      return failed_precondition("device \"cuda\" but no CUDA device is visible");
    const bool use_cuda = o.device == "cuda" || (o.device == "auto" && cuda);
    if (o.precision == "bf16" && !use_cuda)
      return invalid_argument("precision \"bf16\" needs the CUDA device");
    std::vector<torch::Device> devices;
    if (use_cuda) {
      const int visible = static_cast<int>(torch::cuda::device_count());
      std::vector<int> gpus = o.gpus;
      if (gpus.empty()) {
        for (int g = 0; g < visible; ++g) gpus.push_back(g);
      }
      for (int g : gpus) {
        if (g >= visible)
          return failed_precondition("gpus: GPU " + std::to_string(g) + " is not visible (" +
                                     std::to_string(visible) + " are)");
        devices.emplace_back(torch::kCUDA, static_cast<c10::DeviceIndex>(g));
      }
    } else {
      devices.assign(static_cast<size_t>(o.cpu_replicas), torch::Device(torch::kCPU));
    }
    return devices;
  }

  // The replica on `device`: the model folder streamed there in its base dtype, LoRA added.
  Result<Replica> load_replica(torch::Device device) {
    Replica r;
    r.device = device;
    KEVIN_ASSIGN_OR_RETURN(r.model, load_qwen2_dir(o.model_dir, device, base_dtype(o, device)));
    if (o.lora.rank > 0) KEVIN_RETURN_IF_ERROR(r.model->add_lora(o.lora));
    r.model->set_activation_checkpointing(o.activation_checkpointing);
    return r;
  }

  void add_optimizer(Replica& r) const {
    r.adam = std::make_unique<FusedAdamW>(r.model->trainable_parameters(),
                                          torch::optim::AdamWOptions(o.optimizer.lr)
                                              .betas({o.optimizer.beta1, o.optimizer.beta2})
                                              .eps(o.optimizer.eps)
                                              .weight_decay(o.optimizer.weight_decay));
    r.adam->set_state_on_host(o.optimizer.state_on_host);
  }

  // Copies replica 0's parameters into the others (LoRA's random initialisation, a resumed
  // checkpoint): replicas must start equal.
  void copy_weights_to_replicas() {
    torch::NoGradGuard no_grad;
    const auto source = model()->named_parameters();
    for (size_t r = 1; r < replicas.size(); ++r) {
      for (auto& item : replicas[r].model->named_parameters())
        item.value().copy_(source[item.key()]);
    }
  }

  Status load_model() {
    KEVIN_ASSIGN_OR_RETURN(std::vector<torch::Device> devices, choose_devices());
    bf16 = devices.front().is_cuda() && o.precision != "fp32";
    KEVIN_ASSIGN_OR_RETURN(Tokenizer t, Tokenizer::load(o.model_dir / "tokenizer.json"));
    tokenizer = std::make_unique<Tokenizer>(std::move(t));
    for (const auto& device : devices) {
      KEVIN_ASSIGN_OR_RETURN(Replica r, load_replica(device));
      add_optimizer(r);
      replicas.push_back(std::move(r));
    }
    copy_weights_to_replicas();
    if (replicas.size() > 1) {
      KEVIN_ASSIGN_OR_RETURN(group, make_group(devices));
    }
    return Status::ok();
  }

  // NCCL between GPUs when this build has it; host memory otherwise (the CPU, tests).
  static Result<std::unique_ptr<Collective>> make_group(const std::vector<torch::Device>& devices) {
    if (!devices.front().is_cuda() || !nccl_available())
      return make_host_collective(static_cast<int>(devices.size()));
    std::vector<int> ordinals;
    for (const auto& d : devices) ordinals.push_back(d.index());
    return make_nccl_collective(ordinals);
  }

  NamedTensors trainable_weights() const {
    return o.lora.rank > 0 ? model()->lora_weights() : model()->named_weights();
  }

  // Keeps the config beside the run; a different config is refused, except for the keys a
  // resumed run may change (without_resumable_keys).
  Status keep_config() {
    const fs::path file = o.out_dir / "train_config.json";
    if (fs::exists(file)) {
      KEVIN_ASSIGN_OR_RETURN(std::string text, read_file(file));
      KEVIN_ASSIGN_OR_RETURN(Json kept, parse_json(text));
      if (without_resumable_keys(kept) != without_resumable_keys(o.source)) {
        return already_exists(
            o.out_dir.string() +
            " holds a training run with another config (only \"steps\", \"gpus\", "
            "\"cpu_replicas\", \"rollout.max_tokens\", \"rollout.max_tokens_schedule\" and "
            "\"optimizer.state_on_host\" may change)");
      }
    }
    return write_file_atomic(file, dump_json(o.source, 2) + "\n");
  }

  Status resume() {
    const auto latest = latest_checkpoint(o.out_dir);
    if (latest) {
      KEVIN_ASSIGN_OR_RETURN(auto file, SafetensorsFile::open(latest->dir / kWeightsFile));
      torch::NoGradGuard no_grad;
      for (auto& [name, param] : trainable_weights()) {
        auto saved = file.tensor(name);
        if (!saved.is_ok())
          return invalid_argument("checkpoint " + latest->dir.string() + ": " +
                                  saved.status().message());
        if (saved->sizes() != param.sizes())
          return invalid_argument("checkpoint " + latest->dir.string() + ": " + name +
                                  " has another shape");
        param.copy_(*saved);
      }
      copy_weights_to_replicas();
      for (auto& r : replicas) {
        try {
          // Straight to host memory when the moments live there (a 7B model's would not fit
          // on the GPU beside it), then pinned or moved beside their parameters.
          const torch::Device state_device =
              o.optimizer.state_on_host ? torch::Device(torch::kCPU) : r.device;
          torch::load(*r.adam, (latest->dir / kOptimizerFile).string(), state_device);
          r.adam->place_state();
        } catch (const std::exception& e) {
          return invalid_argument("checkpoint " + latest->dir.string() +
                                  ": optimizer state: " + e.what());
        }
      }
      next_step = latest->next_step;
      optimizer_steps = latest->optimizer_steps;
      if (latest->warmup_steps) warmup_steps = *latest->warmup_steps;
    }
    // Work past the checkpoint is redone, so that a resumed run equals an uninterrupted one.
    remove_steps_after(o.out_dir / "rollouts", next_step);
    remove_steps_after(o.out_dir / "holdout", next_step);
    return truncate_log(o.out_dir / kLogFile, next_step);
  }

  // Replicas take identical steps, so they must hold identical weights; a difference means
  // a broken collective, and a checkpoint of replica 0 alone would hide it.
  Status check_replicas_agree() {
    torch::NoGradGuard no_grad;
    const auto reference = model()->trainable_parameters();
    for (size_t r = 1; r < replicas.size(); ++r) {
      const auto params = replicas[r].model->trainable_parameters();
      for (size_t i = 0; i < params.size(); ++i) {
        if (!torch::equal(params[i].to(reference[i].device()), reference[i])) {
          return internal_error("the replica on " + replicas[r].device.str() +
                                " drifted from the one on " + replicas.front().device.str() +
                                " (parameter " + std::to_string(i) + ")");
        }
      }
    }
    return Status::ok();
  }

  Status checkpoint() {
    KEVIN_RETURN_IF_ERROR(check_replicas_agree());
    const fs::path dir = o.out_dir / "checkpoints" / step_name(next_step);
    const fs::path tmp = dir.string() + ".tmp";
    std::error_code ec;
    fs::remove_all(tmp, ec);
    KEVIN_RETURN_IF_ERROR(write_safetensors(tmp / kWeightsFile, trainable_weights()));
    try {
      torch::save(*replicas.front().adam, (tmp / kOptimizerFile).string());
    } catch (const std::exception& e) {
      return io_error("saving the optimizer state: " + std::string(e.what()));
    }
    const Json state = {{"next_step", next_step},
                        {"optimizer_steps", optimizer_steps},
                        {"warmup_steps", warmup_steps},
                        {"kevin_version", version_string()}};
    KEVIN_RETURN_IF_ERROR(write_file_atomic(tmp / kStateFile, dump_json(state, 1) + "\n"));
    fs::remove_all(dir, ec);
    fs::rename(tmp, dir, ec);
    if (ec) return io_error("cannot publish checkpoint " + dir.string() + ": " + ec.message());
    prune_checkpoints();
    return Status::ok();
  }

  void prune_checkpoints() {
    std::vector<int> steps;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(o.out_dir / "checkpoints", ec)) {
      if (const int s = step_of(entry.path().filename().string()); s >= 0) steps.push_back(s);
    }
    std::sort(steps.rbegin(), steps.rend());
    for (size_t i = static_cast<size_t>(o.keep_checkpoints); i < steps.size(); ++i) {
      fs::remove_all(o.out_dir / "checkpoints" / step_name(steps[i]), ec);
    }
  }

  // Multi-turn rollouts of `tasks` with the current weights into `dir` (a kevin run folder),
  // responses cut at `max_tokens`. `sampling_s` (when given) receives the seconds in which the
  // policy was sampling.
  Result<Turns> rollout(const fs::path& dir, const std::vector<tasks::TaskInfo>& tasks,
                        int max_tokens, double* sampling_s = nullptr) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return unavailable("cannot create " + dir.string() + ": " + ec.message());
    KEVIN_ASSIGN_OR_RETURN(auto store, rollout::RunStore::open(dir / "run.db"));
    rollout::RolloutConfig config = o.rollout;
    config.generation.max_tokens = max_tokens;
    config.prompt.backend = evaluator->backend();
    config.prompt.format = evaluator->answer_format();
    config.prompt.device_name = evaluator->device_name();
    LocalPolicyOptions po;
    po.model_dir = o.model_dir;
    po.open_think = o.open_think;
    // Trajectories advancing at once are shared out over the replicas.
    const auto per_replica =
        (static_cast<size_t>(std::max(1, config.parallel)) + replicas.size() - 1) / replicas.size();
    po.max_batch = per_replica;
    po.autocast_bf16 = bf16;
    std::vector<Qwen2ForCausalLM> models;
    for (auto& r : replicas) {
      r.model->eval();
      models.push_back(r.model);
      po.replica_gates.push_back(gate_of(r));
    }
    LocalPolicy policy(std::move(models), *tokenizer, po);
    rollout::Progress progress;
    rollout::Rollout run(config, &policy, evaluator, &store, &progress);
    Status ran;
    {
      // A live line while the step's turns are sampled and judged (a heartbeat without a terminal).
      rollout::ProgressDisplay display(&progress, ::isatty(STDERR_FILENO) == 1);
      ran = run.run(tasks, interrupt);
    }
    KEVIN_RETURN_IF_ERROR(ran);
    if (sampling_s) *sampling_s = policy.sampling_seconds();
    KEVIN_ASSIGN_OR_RETURN(Turns turns, rollout::scored_turns(store, config));
    KEVIN_RETURN_IF_ERROR(
        rollout::write_run_outputs(turns, dir, evaluator->backend() == "cuda" ? "cu" : "cpp"));
    return turns;
  }

  void set_lr(double lr) {
    for (auto& r : replicas) {
      for (auto& g : r.adam->param_groups())
        static_cast<torch::optim::AdamWOptions&>(g.options()).lr(lr);
    }
  }

  // The engine's timing gate of the replica's GPU (nullptr on the CPU or when the engine does
  // not time there): the trainer's GPU work holds it shared, so timing never overlaps it.
  DeviceGate* gate_of(const Replica& r) const {
    return r.device.is_cuda() ? evaluator->device_gate(r.device.index()) : nullptr;
  }

  // One optimizer step of replica `r` on its share of `samples`, in the calling thread.
  Result<UpdateStats> step_replica(size_t r, const std::vector<Sample>& samples,
                                   const UpdateConfig& config) {
    Replica& replica = replicas[r];
    try {
      const SharedDeviceLock not_while_timing(gate_of(replica));
      const DeviceOfThread on_device(replica.device);
      Bf16Autocast autocast(bf16);  // thread-local: each replica's thread opens its own
      replica.model->train();
      KEVIN_ASSIGN_OR_RETURN(auto stats,
                             grpo_update(replica.model, *replica.adam, samples, config,
                                         ReplicaRank{group.get(), static_cast<int>(r)}));
      return stats.front();
    } catch (const std::exception& e) {
      return internal_error("replica on " + replica.device.str() + ": " + e.what());
    }
  }

  // One optimizer step of every replica, each in its own thread (run_ranks: a failing replica
  // aborts the group, and the failure that caused it is the one reported).
  Result<UpdateStats> step_all(const std::vector<Sample>& samples, const UpdateConfig& config) {
    if (replicas.size() == 1) return step_replica(0, samples, config);
    std::vector<UpdateStats> stats(replicas.size());
    KEVIN_RETURN_IF_ERROR(run_ranks(static_cast<int>(replicas.size()), group.get(), [&](int r) {
      auto replica_stats = step_replica(static_cast<size_t>(r), samples, config);
      if (replica_stats.is_ok()) stats[static_cast<size_t>(r)] = *replica_stats;
      return replica_stats.status();
    }));
    return stats.front();
  }

  // Linear warm-up over the run's first warmup_steps optimizer steps, then constant.
  double lr_for(int64_t optimizer_step) const {
    if (warmup_steps <= 0) return o.optimizer.lr;
    const double ramp = static_cast<double>(optimizer_step + 1) / static_cast<double>(warmup_steps);
    return o.optimizer.lr * std::min(1.0, ramp);
  }

  // The optimizer steps of training step `step`'s batch; returns the update's metrics.
  Result<Json> update(const std::vector<Sample>& samples, int step) {
    UpdateConfig config = o.update;
    config.optimizer_steps = 1;  // one at a time, so each gets its warm-up learning rate
    config.max_tokens = normalisation_tokens_at(o, step);
    const auto batches = step_batches(samples.size(), o.update.optimizer_steps, o.step_samples,
                                      step_seed(o.seed, step, 3));
    double loss = 0, grad_norm = 0, clipped = 0, entropy = 0, kl = 0, lr = 0;
    int64_t tokens = 0;
    const auto start = std::chrono::steady_clock::now();
    std::vector<Sample> part;
    for (const auto& picked : batches) {
      // A mini-batch's own size sets the loss normaliser (sequences × L), as grpo_update counts.
      const bool whole = picked.size() == samples.size();
      part.clear();
      if (!whole) {
        for (size_t i : picked) part.push_back(samples[i]);
      }
      lr = lr_for(optimizer_steps);
      set_lr(lr);
      KEVIN_ASSIGN_OR_RETURN(UpdateStats stats, step_all(whole ? samples : part, config));
      ++optimizer_steps;
      loss += stats.loss;
      grad_norm += stats.grad_norm;
      clipped += stats.clipped_fraction;
      entropy += stats.entropy;
      kl += stats.kl;
      tokens += stats.tokens;
    }
    if (on_cuda()) torch::cuda::synchronize();
    const double seconds = seconds_since(start);
    const auto steps = static_cast<double>(batches.size());
    return Json{{"loss", loss / steps},
                {"grad_norm", grad_norm / steps},
                {"clip_fraction", clipped / steps},
                {"entropy", entropy / steps},
                {"kl", kl / steps},
                {"lr", lr},
                {"samples", samples.size()},
                {"train_tokens", tokens},
                {"update_s", seconds},
                {"train_tokens_per_s", seconds > 0 ? static_cast<double>(tokens) / seconds : 0.0}};
  }

  Result<Json> train_step(int step) {
    torch::manual_seed(step_seed(o.seed, step, 1));
    const auto tasks = tasks_for_step(o.train_tasks, o.tasks_per_step, o.seed, step);
    const auto start = std::chrono::steady_clock::now();
    double sampling_s = 0;
    const int max_tokens = max_tokens_at(o, step);
    KEVIN_ASSIGN_OR_RETURN(Turns turns, rollout(o.out_dir / "rollouts" / step_name(step + 1), tasks,
                                                max_tokens, &sampling_s));
    const double rollout_s = seconds_since(start);
    Json line = {{"kind", "train"},
                 {"step", step + 1}};  // 1-based, as printed and as folders are named
    line.update(rollout_metrics(turns, *tokenizer, o.not_okay_prefix));
    line["max_tokens"] = max_tokens;
    double generated = 0;
    for (const rollout::ScoredTurn& t : turns)
      generated += static_cast<double>(t.completion_tokens);
    line["rollout_s"] = rollout_s;
    // Against the time the policy sampled: the rollout also waits for the engine's verdicts.
    line["sampling_s"] = sampling_s;
    line["gen_tokens_per_s"] = sampling_s > 0 ? generated / sampling_s : 0.0;
    KEVIN_ASSIGN_OR_RETURN(auto samples, samples_of(turns));
    if (samples.empty())
      return failed_precondition("step " + std::to_string(step) +
                                 ": the rollout produced no samples");
    KEVIN_ASSIGN_OR_RETURN(Json stats, update(samples, step));
    line.update(stats);
    return line;
  }

  Result<Json> holdout(int step) {
    torch::manual_seed(step_seed(o.seed, step, 2));
    const int max_tokens = max_tokens_at(o, step);
    KEVIN_ASSIGN_OR_RETURN(Turns turns, rollout(o.out_dir / "holdout" / step_name(step + 1),
                                                o.holdout_tasks, max_tokens));
    Json line = {{"kind", "holdout"}, {"step", step + 1}};
    line.update(rollout_metrics(turns, *tokenizer, o.not_okay_prefix));
    line["max_tokens"] = max_tokens;
    return line;
  }

  Status export_all() {
    KEVIN_ASSIGN_OR_RETURN(torch::ScalarType dtype, export_dtype_of(o.export_dtype));
    if (o.export_merged) {
      const fs::path dir = o.out_dir / "export" / "merged";
      KEVIN_RETURN_IF_ERROR(save_merged_qwen2_dir(model(), dir, dtype));
      for (const char* name : {"tokenizer.json", "tokenizer_config.json", "vocab.json",
                               "merges.txt", "special_tokens_map.json", "generation_config.json"}) {
        std::error_code ec;
        if (fs::exists(o.model_dir / name))
          fs::copy_file(o.model_dir / name, dir / name, fs::copy_options::overwrite_existing, ec);
        if (ec)
          return io_error("copying " + std::string(name) + " into the export: " + ec.message());
      }
    }
    if (o.export_lora && o.lora.rank > 0) {
      KEVIN_RETURN_IF_ERROR(save_peft_adapter(model(), o.out_dir / "export" / "lora",
                                              fs::absolute(o.model_dir).string(), dtype));
    }
    return Status::ok();
  }

  std::string progress_line(const Json& line) const {
    std::ostringstream s;
    const auto number = [&](const char* key) {
      return line.contains(key) && line[key].is_number() ? line[key].get<double>() : 0.0;
    };
    s.precision(3);
    s << line["kind"].get<std::string>() << " step " << line["step"].get<int>() << "/" << o.steps
      << ": reward " << number("reward_mean") << ", correct " << 100 * number("correct_rate")
      << "%";
    if (line["kind"] == "train") {
      s << ", loss " << number("loss") << ", grad norm " << number("grad_norm") << ", lr "
        << number("lr") << ", " << static_cast<int64_t>(number("gen_tokens_per_s"))
        << " gen tok/s, " << static_cast<int64_t>(number("train_tokens_per_s")) << " train tok/s";
    }
    return s.str();
  }

  // After an interrupt: the last finished step gets a checkpoint if it has none.
  Status stop_interrupted(int checkpointed) {
    if (next_step > checkpointed) KEVIN_RETURN_IF_ERROR(checkpoint());
    return cancelled("interrupted before step " + std::to_string(next_step + 1) + "; steps 1-" +
                     std::to_string(next_step) + " are in the checkpoint");
  }

  Status run(std::ostream& log, const std::atomic<bool>* stop) {
    interrupt = stop;
    const fs::path log_file = o.out_dir / kLogFile;
    int checkpointed = next_step;
    const auto interrupted = [&] { return stop != nullptr && stop->load(); };
    for (int step = next_step; step < o.steps; ++step) {
      if (interrupted()) return stop_interrupted(checkpointed);
      auto stepped = train_step(step);
      if (!stepped.is_ok() && interrupted()) return stop_interrupted(checkpointed);
      KEVIN_ASSIGN_OR_RETURN(Json line, std::move(stepped));
      KEVIN_RETURN_IF_ERROR(append_line(log_file, line));
      log << progress_line(line) << std::endl;
      if (o.holdout_every > 0 && !o.holdout_tasks.empty() &&
          ((step + 1) % o.holdout_every == 0 || step + 1 == o.steps)) {
        auto evaluated = holdout(step);
        if (!evaluated.is_ok() && interrupted()) {
          next_step = step + 1;
          return stop_interrupted(checkpointed);
        }
        KEVIN_ASSIGN_OR_RETURN(Json held, std::move(evaluated));
        KEVIN_RETURN_IF_ERROR(append_line(log_file, held));
        log << progress_line(held) << std::endl;
      }
      next_step = step + 1;
      if (next_step % o.checkpoint_every == 0 || next_step == o.steps) {
        KEVIN_RETURN_IF_ERROR(checkpoint());
        checkpointed = next_step;
      }
    }
    KEVIN_RETURN_IF_ERROR(export_all());
    log << "exported to " << (o.out_dir / "export").string() << std::endl;
    return Status::ok();
  }
};

Trainer::Trainer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Trainer::~Trainer() = default;

int Trainer::next_step() const { return impl_->next_step; }

Result<std::unique_ptr<Trainer>> Trainer::create(TrainerOptions options,
                                                 env::Evaluator* evaluator) {
  if (options.train_tasks.empty()) return invalid_argument("no training tasks");
  auto impl = std::make_unique<Impl>();
  impl->o = std::move(options);
  impl->evaluator = evaluator;
  impl->warmup_steps = warmup_optimizer_steps(impl->o);  // a checkpoint's value replaces it
  std::error_code ec;
  fs::create_directories(impl->o.out_dir, ec);
  if (ec) return unavailable("cannot create " + impl->o.out_dir.string() + ": " + ec.message());
  try {
    KEVIN_RETURN_IF_ERROR(impl->load_model());
    KEVIN_RETURN_IF_ERROR(impl->keep_config());
    KEVIN_RETURN_IF_ERROR(impl->resume());
  } catch (const std::exception& e) {
    // libtorch reports device failures (out of memory, no driver) by exception.
    return internal_error(std::string("loading the model: ") + e.what());
  }
  return std::unique_ptr<Trainer>(new Trainer(std::move(impl)));
}

Status Trainer::run(std::ostream& log, const std::atomic<bool>* interrupt) {
  try {
    return impl_->run(log, interrupt);
  } catch (const std::exception& e) {
    return internal_error("training step " + std::to_string(impl_->next_step) + ": " + e.what());
  }
}

}  // namespace kevin::train
