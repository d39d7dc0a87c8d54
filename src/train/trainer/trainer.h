// trainer.h — `kevin train`'s loop (docs/trainer.md; the paper's training loop, arXiv 2507.11948
// §3.3): each step samples multi-turn rollouts (m trajectories × n turns per task) from the model
// being trained, in process, turns the stored turns into GRPO samples (their exact tokens, sampler
// log-probabilities and group advantages) and makes `steps_per_batch` AdamW steps; periodic holdout
// rollouts, checkpoints that resume exactly, and exports as an HF folder and a PEFT LoRA adapter.
// Data parallel over the GPUs of one host: one replica per GPU samples and trains on its
// share, and summed gradients keep the replicas identical.
#pragma once

#include <atomic>

#include <filesystem>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/status.h"
#include "env/evaluator.h"
#include "rollout/rollout.h"
#include "tasks/suite.h"
#include "train/grpo/grpo_update.h"
#include "train/model/qwen2_config.h"
#include "train/model/qwen2_model.h"
#include "train/trainer/memory_estimate.h"

namespace kevin::train {

struct OptimizerConfig {
  double lr = 1e-6;
  double weight_decay = 0.0;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  int warmup_steps = 0;     // optimizer steps of linear warm-up from lr/warmup to lr
  double warmup_ratio = 0;  // or this share of the run's optimizer steps; exclusive with the above
  // AdamW's two moments in host memory (pinned), streamed through the GPU at each step: 8 bytes
  // per trainable parameter leave the GPU (full fine-tuning of a 7B model on one GPU).
  bool state_on_host = false;
};

// From training step `step` on (0-based, as Trainer::next_step counts), responses may be
// `max_tokens` tokens long.
struct MaxTokensChange {
  int step = 0;
  int max_tokens = 0;
};

// How the `steps_per_batch` optimizer steps of a rollout batch use its samples.
enum class StepSamples {
  kWholeBatch,  // every step runs over the whole batch
  kSplit,       // disjoint mini-batches, one per step: each sample is used once
};

struct TrainerOptions {
  std::filesystem::path model_dir;  // HF folder: config.json, *.safetensors, tokenizer.json
  std::filesystem::path out_dir;
  std::vector<tasks::TaskInfo> train_tasks, holdout_tasks;  // resolved by the caller
  int steps = 10;
  int tasks_per_step = 4;
  rollout::RolloutConfig rollout;  // allocations[0] is m x n; generation, prompt, rewards
  // The response limit changes from the rollout's generation.max_tokens, in increasing steps.
  std::vector<MaxTokensChange> max_tokens_schedule;
  // GRPO, steps per batch, micro-batch, grad clip. Four sequences a micro-batch: a long
  // answer's activations and logits are held per sequence.
  UpdateConfig update = [] {
    UpdateConfig u;
    u.micro_batch = 4;
    return u;
  }();
  // grpo.max_tokens was left out: L of the constant normalisation is each step's response
  // limit (update.max_tokens holds the first one).
  bool normalisation_follows_limit = true;
  StepSamples step_samples = StepSamples::kWholeBatch;
  OptimizerConfig optimizer;
  LoraConfig lora;  // rank 0: full fine-tuning
  bool activation_checkpointing = false;
  std::string device = "auto";  // auto (CUDA when present), cuda, cpu
  // Data parallel: one replica of the model per GPU (CUDA ordinals; empty = every visible GPU),
  // gradients summed over NCCL (host memory without it). On the CPU, `cpu_replicas` threads
  // do the same through host memory (the path tested without GPUs).
  std::vector<int> gpus;
  int cpu_replicas = 1;
  std::string precision = "auto";  // auto (bf16 autocast on CUDA, fp32 on CPU), bf16, fp32
  int holdout_every = 0;           // steps between holdout rollouts; 0: never
  int checkpoint_every = 1;
  int keep_checkpoints = 2;  // older ones are deleted
  uint64_t seed = 0;
  bool open_think = false;               // start answers inside <think> (QwQ's template)
  std::string not_okay_prefix = "Okay";  // how the base model's reasoning usually opens ("" = off)
  bool export_merged = true;             // export/merged: HF folder (adapters folded in)
  bool export_lora = true;               // export/lora: PEFT adapter (LoRA runs only)
  std::string export_dtype = "bfloat16";
  Json source;  // the config as given (kept in out_dir/train_config.json)
};

// Keys of the config file that the caller resolves itself (task selection, the engine).
inline const std::vector<std::string> kCallerConfigKeys = {
    "tasks", "tasks_dir", "split", "holdout_tasks", "holdout_split", "engine"};

// Parses `kevin train`'s JSON config (docs/trainer.md lists every key) except the caller's
// keys above. Unknown keys and ill-typed or out-of-range values are kInvalidArgument naming
// the key; "model" and "out" are required.
Result<TrainerOptions> trainer_options_from_json(const Json& j);

// Every key trainer_options_from_json reads, with the values it resolved (defaults filled
// in); the caller's keys are left out. trainer_options_from_json(to_json(o)) gives o back.
Json to_json(const TrainerOptions& o);

// The name of every key trainer_options_from_json reads ("steps", "grpo.clip_low", ...): the
// one schema both directions use (docs/trainer.md documents each).
std::vector<std::string> trainer_config_keys();

// The response limit of training step `step` (0-based): the value of the schedule's last
// change at or before it, else rollout.generation.max_tokens.
int max_tokens_at(const TrainerOptions& o, int step);

// L of the constant normalisation at training step `step`: grpo.max_tokens when it was given,
// else max_tokens_at(o, step).
int64_t normalisation_tokens_at(const TrainerOptions& o, int step);

// The optimizer steps of linear warm-up: optimizer.warmup_steps, or
// ceil(warmup_ratio × steps × steps_per_batch) for the config's `steps` (a product within
// rounding error of an integer counts as that integer: 0.07 × 100 is 7, not 8).
int64_t warmup_optimizer_steps(const TrainerOptions& o);

// The samples each of the `steps` optimizer steps of a batch of `samples` runs, as indices.
// kWholeBatch: every index, for every step. kSplit: the indices shuffled by `seed`, cut into
// `steps` disjoint parts whose sizes differ by at most one (one part per sample when there
// are fewer samples than steps), each part in ascending order.
std::vector<std::vector<size_t>> step_batches(size_t samples, int steps, StepSamples mode,
                                              uint64_t seed);
// The dtype a replica's base weights are kept in on `device`: bf16 for LoRA under bf16
// precision on CUDA (they are frozen: no optimizer update is lost to rounding, and autocast
// has nothing to re-cast per call), fp32 otherwise (full fine-tuning keeps fp32 masters; the
// CPU computes in fp32).
torch::ScalarType base_dtype(const TrainerOptions& o, torch::Device device);

// The longest answer any step allows: rollout.max_tokens or a larger value of its schedule.
int longest_answer(const TrainerOptions& o);

// kInvalidArgument when a full prompt (rollout.context_tokens) plus the longest answer would
// pass the model's max_position_embeddings: positions beyond those the model was trained on
// give it rotary angles it never saw. The message names both keys and the sum. `kevin train`
// warns with it (dry run and start-up summary) rather than refusing: the budget is an
// estimate and most prompts are shorter, so the defaults (24000 + 16384) pass a 32k model's
// positions and still run.
Status check_context_fits(const TrainerOptions& o, const Qwen2Config& model);

// What a replica on `device` runs with these options, for estimate_memory: the base dtype,
// checkpointing, the largest micro-batch (the token budget, or micro_batch sequences of a
// full prompt plus the longest answer), its scored tokens, the logit chunk, and the sequences
// one replica samples at once.
Workload workload_of(const TrainerOptions& o, torch::Device device, int replicas = 1);

class Trainer {
 public:
  // Loads the model (when out_dir holds a checkpoint, the latest one: resume), builds the
  // optimizer and keeps the config in out_dir/train_config.json. A resumed run keeps the
  // warm-up length its checkpoint recorded (warmup_optimizer_steps when the run started), so
  // a changed `steps` neither stretches nor restarts the warm-up. `evaluator` is borrowed and
  // must outlive the trainer. Errors: a model folder or checkpoint that does not load
  // (kNotFound / kInvalidArgument), an out_dir holding a run with another config
  // (kAlreadyExists; only "steps", "gpus", "cpu_replicas", "rollout.max_tokens" and
  // "rollout.max_tokens_schedule" may change on resume), no CUDA device for device "cuda" or
  // a listed GPU that is not there (kFailedPrecondition).
  static Result<std::unique_ptr<Trainer>> create(TrainerOptions options, env::Evaluator* evaluator);
  ~Trainer();

  // Runs the remaining steps, then the exports. One progress line per step goes to `log`;
  // train_log.jsonl gets every step's metrics. A failed rollout or update stops the run with
  // its error; the last checkpoint stays, and creating a trainer on out_dir again resumes.
  // Once `interrupt` (optional, borrowed) reads true, the step in progress is abandoned
  // after the rollout's turns in evaluation are stored, a checkpoint of the last finished
  // step is written if it has none, and run() returns kCancelled.
  Status run(std::ostream& log, const std::atomic<bool>* interrupt = nullptr);

  int next_step() const;  // the first step run() does (0 for a new run)

 private:
  struct Impl;
  explicit Trainer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kevin::train
