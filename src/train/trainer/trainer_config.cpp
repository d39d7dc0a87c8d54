// trainer_config.cpp — `kevin train`'s JSON config into TrainerOptions: defaults for every
// key left out, and errors naming the key for anything unknown, ill-typed or out of range.
#include <cmath>
#include <map>
#include <set>

#include "core/suggest.h"
#include "train/trainer/trainer.h"

namespace kevin::train {
namespace {

// Names other trainers give to our keys: suggested where no typo is near.
const std::map<std::string, std::string> kOtherNames = {
    {"learning_rate", "lr"},        {"max_new_tokens", "max_tokens"},
    {"max_steps", "steps"},         {"num_steps", "steps"},
    {"total_steps", "steps"},       {"num_generations", "trajectories"},
    {"max_grad_norm", "grad_clip"}, {"lora_rank", "rank"},
    {"lora_alpha", "alpha"}};

// The key of `allowed` that `key` most likely means, or "".
std::string meant_key(const std::string& key, const std::set<std::string>& allowed) {
  const std::string near =
      nearest_name(key, std::vector<std::string>(allowed.begin(), allowed.end()));
  if (!near.empty()) return near;
  const auto other = kOtherNames.find(key);
  return other != kOtherNames.end() && allowed.count(other->second) ? other->second : "";
}

// kInvalidArgument for a key of `obj` outside `allowed` (a typo must not silently fall back).
Status check_keys(const Json& obj, const std::string& where, const std::set<std::string>& allowed) {
  if (!obj.is_object()) return invalid_argument(where + " must be an object");
  for (const auto& item : obj.items()) {
    if (allowed.count(item.key()) == 0) {
      const std::string near = meant_key(item.key(), allowed);
      return invalid_argument("unknown key \"" + item.key() + "\" in " + where +
                              (near.empty() ? "" : " (did you mean \"" + near + "\"?)"));
    }
  }
  return Status::ok();
}

// `obj[key]` when present, else `fallback`; an ill-typed value names "where.key".
template <typename T>
Result<T> get_or(const Json& obj, const std::string& where, const char* key, T fallback) {
  auto value = json_get_or<T>(obj, key, fallback);
  if (!value.is_ok()) return invalid_argument(where + ": " + value.status().message());
  return value;
}

Status at_least(const std::string& name, double value, double low) {
  if (value < low) return invalid_argument(name + " must be at least " + dump_json(Json(low)));
  return Status::ok();
}

Result<rollout::RolloutConfig> parse_rollout(const Json& j) {
  Json merged = rollout::to_json(rollout::RolloutConfig{});
  std::set<std::string> allowed = {"trajectories", "turns", "max_tokens_schedule"};
  for (const auto& item : merged.items()) allowed.insert(item.key());
  KEVIN_RETURN_IF_ERROR(check_keys(j, "\"rollout\"", allowed));
  for (const auto& item : j.items()) merged[item.key()] = item.value();
  merged.erase("max_tokens_schedule");  // the trainer's own (parse_max_tokens_schedule)
  // "trajectories"/"turns" are the shorthand for a single allocation, as kevin run's -m/-n.
  KEVIN_ASSIGN_OR_RETURN(int m, get_or<int>(j, "rollout", "trajectories", 4));
  KEVIN_ASSIGN_OR_RETURN(int n, get_or<int>(j, "rollout", "turns", 4));
  if (!j.contains("allocations"))
    merged["allocations"] = {std::to_string(m) + "x" + std::to_string(n)};
  merged.erase("trajectories");
  merged.erase("turns");
  auto config = rollout::rollout_config_from_json(merged);
  if (!config.is_ok()) return invalid_argument("\"rollout\": " + config.status().message());
  if (config->beam)
    return invalid_argument("\"rollout\": beam search is for evaluation, not training");
  if (config->allocations.size() != 1)
    return invalid_argument("\"rollout\": training takes one allocation (m x n)");
  return config;
}

// rollout.max_tokens_schedule: [{"step": S, "max_tokens": N}, ...] with S increasing.
Result<std::vector<MaxTokensChange>> parse_max_tokens_schedule(const Json& rollout) {
  const Json schedule = rollout.value("max_tokens_schedule", Json::array());
  if (!schedule.is_array())
    return invalid_argument(
        "rollout.max_tokens_schedule: expected a list of {\"step\", \"max_tokens\"} objects");
  std::vector<MaxTokensChange> out;
  for (size_t i = 0; i < schedule.size(); ++i) {
    const std::string where = "rollout.max_tokens_schedule[" + std::to_string(i) + "]";
    KEVIN_RETURN_IF_ERROR(check_keys(schedule[i], where, {"step", "max_tokens"}));
    auto step = json_get<int>(schedule[i], "step");
    auto max_tokens = json_get<int>(schedule[i], "max_tokens");
    for (const Status& s : {step.status(), max_tokens.status()}) {
      if (!s.is_ok()) return invalid_argument(where + ": " + s.message());
    }
    const MaxTokensChange change{*step, *max_tokens};
    KEVIN_RETURN_IF_ERROR(at_least(where + ".step", change.step, 0));
    KEVIN_RETURN_IF_ERROR(at_least(where + ".max_tokens", change.max_tokens, 1));
    if (!out.empty() && change.step <= out.back().step)
      return invalid_argument(where + ".step must be greater than the change before it (" +
                              std::to_string(out.back().step) + ")");
    out.push_back(change);
  }
  return out;
}

Status parse_grpo(const Json& j, TrainerOptions& o) {
  KEVIN_RETURN_IF_ERROR(check_keys(
      j, "\"grpo\"",
      {"clip_low", "clip_high", "kl_beta", "length_norm", "steps_per_batch", "step_samples",
       "micro_batch", "micro_batch_tokens", "logit_chunk_rows", "grad_clip", "max_tokens"}));
  UpdateConfig& u = o.update;
  KEVIN_ASSIGN_OR_RETURN(u.grpo.clip_low, get_or<double>(j, "grpo", "clip_low", u.grpo.clip_low));
  KEVIN_ASSIGN_OR_RETURN(u.grpo.clip_high,
                         get_or<double>(j, "grpo", "clip_high", u.grpo.clip_high));
  KEVIN_ASSIGN_OR_RETURN(u.grpo.kl_beta, get_or<double>(j, "grpo", "kl_beta", u.grpo.kl_beta));
  KEVIN_ASSIGN_OR_RETURN(std::string norm, get_or<std::string>(j, "grpo", "length_norm",
                                                               length_norm_name(u.grpo.norm)));
  const auto parsed = length_norm_from_name(norm);
  if (!parsed)
    return invalid_argument("grpo.length_norm: expected " + length_norm_names() + ", got \"" +
                            norm + "\"");
  u.grpo.norm = *parsed;
  KEVIN_ASSIGN_OR_RETURN(u.optimizer_steps,
                         get_or<int>(j, "grpo", "steps_per_batch", u.optimizer_steps));
  KEVIN_ASSIGN_OR_RETURN(std::string step_samples,
                         get_or<std::string>(j, "grpo", "step_samples", "whole_batch"));
  if (step_samples != "whole_batch" && step_samples != "split")
    return invalid_argument("grpo.step_samples: expected whole_batch or split, got \"" +
                            step_samples + "\"");
  o.step_samples = step_samples == "split" ? StepSamples::kSplit : StepSamples::kWholeBatch;
  KEVIN_ASSIGN_OR_RETURN(u.micro_batch, get_or<int64_t>(j, "grpo", "micro_batch", 4));
  KEVIN_ASSIGN_OR_RETURN(u.micro_batch_tokens, get_or<int64_t>(j, "grpo", "micro_batch_tokens", 0));
  KEVIN_ASSIGN_OR_RETURN(u.logit_chunk_rows,
                         get_or<int64_t>(j, "grpo", "logit_chunk_rows", u.logit_chunk_rows));
  KEVIN_ASSIGN_OR_RETURN(u.grad_clip, get_or<double>(j, "grpo", "grad_clip", u.grad_clip));
  KEVIN_ASSIGN_OR_RETURN(u.max_tokens, get_or<int64_t>(j, "grpo", "max_tokens", 0));
  KEVIN_RETURN_IF_ERROR(at_least("grpo.clip_low", u.grpo.clip_low, 0));
  KEVIN_RETURN_IF_ERROR(at_least("grpo.clip_high", u.grpo.clip_high, 0));
  KEVIN_RETURN_IF_ERROR(at_least("grpo.kl_beta", u.grpo.kl_beta, 0));
  KEVIN_RETURN_IF_ERROR(at_least("grpo.steps_per_batch", u.optimizer_steps, 1));
  KEVIN_RETURN_IF_ERROR(at_least("grpo.micro_batch", static_cast<double>(u.micro_batch), 1));
  KEVIN_RETURN_IF_ERROR(
      at_least("grpo.micro_batch_tokens", static_cast<double>(u.micro_batch_tokens), 0));
  KEVIN_RETURN_IF_ERROR(
      at_least("grpo.logit_chunk_rows", static_cast<double>(u.logit_chunk_rows), 0));
  KEVIN_RETURN_IF_ERROR(at_least("grpo.max_tokens", static_cast<double>(u.max_tokens), 0));
  if (!(u.grad_clip > 0)) return invalid_argument("grpo.grad_clip must be positive");
  o.normalisation_follows_limit = u.max_tokens == 0;
  return Status::ok();
}

Status parse_optimizer(const Json& j, OptimizerConfig& o) {
  KEVIN_RETURN_IF_ERROR(check_keys(j, "\"optimizer\"",
                                   {"lr", "weight_decay", "beta1", "beta2", "eps", "warmup_steps",
                                    "warmup_ratio", "state_on_host"}));
  KEVIN_ASSIGN_OR_RETURN(o.lr, get_or<double>(j, "optimizer", "lr", o.lr));
  KEVIN_ASSIGN_OR_RETURN(o.weight_decay,
                         get_or<double>(j, "optimizer", "weight_decay", o.weight_decay));
  KEVIN_ASSIGN_OR_RETURN(o.beta1, get_or<double>(j, "optimizer", "beta1", o.beta1));
  KEVIN_ASSIGN_OR_RETURN(o.beta2, get_or<double>(j, "optimizer", "beta2", o.beta2));
  KEVIN_ASSIGN_OR_RETURN(o.eps, get_or<double>(j, "optimizer", "eps", o.eps));
  KEVIN_ASSIGN_OR_RETURN(o.warmup_steps,
                         get_or<int>(j, "optimizer", "warmup_steps", o.warmup_steps));
  KEVIN_ASSIGN_OR_RETURN(o.warmup_ratio,
                         get_or<double>(j, "optimizer", "warmup_ratio", o.warmup_ratio));
  KEVIN_ASSIGN_OR_RETURN(o.state_on_host,
                         get_or<bool>(j, "optimizer", "state_on_host", o.state_on_host));
  if (!(o.lr > 0)) return invalid_argument("optimizer.lr must be positive");
  if (!(o.eps > 0)) return invalid_argument("optimizer.eps must be positive");
  KEVIN_RETURN_IF_ERROR(at_least("optimizer.weight_decay", o.weight_decay, 0));
  KEVIN_RETURN_IF_ERROR(at_least("optimizer.warmup_steps", o.warmup_steps, 0));
  if (!(o.warmup_ratio >= 0 && o.warmup_ratio < 1))
    return invalid_argument("optimizer.warmup_ratio must be in [0, 1)");
  if (o.warmup_ratio > 0 && o.warmup_steps > 0)
    return invalid_argument(
        "optimizer.warmup_ratio and optimizer.warmup_steps are exclusive: set one of them");
  if (o.beta1 < 0 || o.beta1 >= 1 || o.beta2 < 0 || o.beta2 >= 1)
    return invalid_argument("optimizer.beta1/beta2 must be in [0, 1)");
  return Status::ok();
}

Status parse_lora(const Json& j, LoraConfig& l) {
  KEVIN_RETURN_IF_ERROR(check_keys(j, "\"lora\"", {"rank", "alpha", "targets"}));
  KEVIN_ASSIGN_OR_RETURN(l.rank, get_or<int64_t>(j, "lora", "rank", l.rank));
  KEVIN_ASSIGN_OR_RETURN(l.alpha, get_or<double>(j, "lora", "alpha", l.alpha));
  KEVIN_ASSIGN_OR_RETURN(l.targets,
                         get_or<std::vector<std::string>>(j, "lora", "targets", l.targets));
  KEVIN_RETURN_IF_ERROR(at_least("lora.rank", static_cast<double>(l.rank), 0));
  if (!(l.alpha > 0)) return invalid_argument("lora.alpha must be positive");
  return Status::ok();
}

Status parse_export(const Json& j, TrainerOptions& o) {
  KEVIN_RETURN_IF_ERROR(check_keys(j, "\"export\"", {"merged", "lora", "dtype"}));
  KEVIN_ASSIGN_OR_RETURN(o.export_merged, get_or<bool>(j, "export", "merged", o.export_merged));
  KEVIN_ASSIGN_OR_RETURN(o.export_lora, get_or<bool>(j, "export", "lora", o.export_lora));
  KEVIN_ASSIGN_OR_RETURN(o.export_dtype, get_or<std::string>(j, "export", "dtype", o.export_dtype));
  if (o.export_dtype != "bfloat16" && o.export_dtype != "float16" && o.export_dtype != "float32") {
    return invalid_argument("export.dtype: expected bfloat16, float16 or float32");
  }
  return Status::ok();
}

Status parse_schedule(const Json& j, TrainerOptions& o) {
  KEVIN_ASSIGN_OR_RETURN(o.steps, get_or<int>(j, "config", "steps", o.steps));
  KEVIN_ASSIGN_OR_RETURN(o.tasks_per_step,
                         get_or<int>(j, "config", "tasks_per_step", o.tasks_per_step));
  KEVIN_ASSIGN_OR_RETURN(o.holdout_every,
                         get_or<int>(j, "config", "holdout_every", o.holdout_every));
  KEVIN_ASSIGN_OR_RETURN(o.checkpoint_every,
                         get_or<int>(j, "config", "checkpoint_every", o.checkpoint_every));
  KEVIN_ASSIGN_OR_RETURN(o.keep_checkpoints,
                         get_or<int>(j, "config", "keep_checkpoints", o.keep_checkpoints));
  KEVIN_ASSIGN_OR_RETURN(o.seed, get_or<uint64_t>(j, "config", "seed", o.seed));
  KEVIN_RETURN_IF_ERROR(at_least("steps", o.steps, 1));
  KEVIN_RETURN_IF_ERROR(at_least("tasks_per_step", o.tasks_per_step, 1));
  KEVIN_RETURN_IF_ERROR(at_least("holdout_every", o.holdout_every, 0));
  KEVIN_RETURN_IF_ERROR(at_least("checkpoint_every", o.checkpoint_every, 1));
  return at_least("keep_checkpoints", o.keep_checkpoints, 1);
}

Status parse_runtime(const Json& j, TrainerOptions& o) {
  KEVIN_ASSIGN_OR_RETURN(o.activation_checkpointing,
                         get_or<bool>(j, "config", "activation_checkpointing", false));
  KEVIN_ASSIGN_OR_RETURN(o.device, get_or<std::string>(j, "config", "device", o.device));
  KEVIN_ASSIGN_OR_RETURN(o.precision, get_or<std::string>(j, "config", "precision", o.precision));
  KEVIN_ASSIGN_OR_RETURN(o.open_think, get_or<bool>(j, "config", "open_think", o.open_think));
  KEVIN_ASSIGN_OR_RETURN(o.not_okay_prefix,
                         get_or<std::string>(j, "config", "not_okay_prefix", o.not_okay_prefix));
  KEVIN_ASSIGN_OR_RETURN(o.cpu_replicas, get_or<int>(j, "config", "cpu_replicas", o.cpu_replicas));
  KEVIN_RETURN_IF_ERROR(at_least("cpu_replicas", o.cpu_replicas, 1));
  if (j.contains("gpus") && j["gpus"] != "all") {
    KEVIN_ASSIGN_OR_RETURN(o.gpus, get_or<std::vector<int>>(j, "config", "gpus", {}));
    if (o.gpus.empty())
      return invalid_argument("gpus: expected \"all\" or a non-empty list of GPU ordinals");
    for (int g : o.gpus) KEVIN_RETURN_IF_ERROR(at_least("gpus", g, 0));
    if (std::set<int>(o.gpus.begin(), o.gpus.end()).size() != o.gpus.size())
      return invalid_argument("gpus: a GPU is listed twice");
  }
  if (o.device != "auto" && o.device != "cuda" && o.device != "cpu")
    return invalid_argument("device: expected auto, cuda or cpu");
  if (o.precision != "auto" && o.precision != "bf16" && o.precision != "fp32") {
    return invalid_argument("precision: expected auto, bf16 or fp32");
  }
  return Status::ok();
}

}  // namespace

Result<TrainerOptions> trainer_options_from_json(const Json& j) {
  std::set<std::string> allowed = {"model",
                                   "out",
                                   "steps",
                                   "tasks_per_step",
                                   "holdout_every",
                                   "checkpoint_every",
                                   "keep_checkpoints",
                                   "seed",
                                   "rollout",
                                   "grpo",
                                   "optimizer",
                                   "lora",
                                   "activation_checkpointing",
                                   "device",
                                   "precision",
                                   "open_think",
                                   "not_okay_prefix",
                                   "export",
                                   "gpus",
                                   "cpu_replicas"};
  allowed.insert(kCallerConfigKeys.begin(), kCallerConfigKeys.end());
  KEVIN_RETURN_IF_ERROR(check_keys(j, "the config", allowed));
  TrainerOptions o;
  o.source = j;
  KEVIN_ASSIGN_OR_RETURN(std::string model, json_get<std::string>(j, "model"));
  KEVIN_ASSIGN_OR_RETURN(std::string out, json_get<std::string>(j, "out"));
  o.model_dir = model;
  o.out_dir = out;
  KEVIN_RETURN_IF_ERROR(parse_schedule(j, o));
  KEVIN_RETURN_IF_ERROR(parse_runtime(j, o));
  const Json rollout = j.value("rollout", Json::object());
  KEVIN_ASSIGN_OR_RETURN(o.rollout, parse_rollout(rollout));
  KEVIN_ASSIGN_OR_RETURN(o.max_tokens_schedule, parse_max_tokens_schedule(rollout));
  KEVIN_RETURN_IF_ERROR(parse_grpo(j.value("grpo", Json::object()), o));
  o.update.temperature = o.rollout.generation.temperature;
  if (o.update.temperature <= 0)
    return invalid_argument("rollout.temperature must be positive for training");
  if (o.update.max_tokens == 0) o.update.max_tokens = o.rollout.generation.max_tokens;
  KEVIN_RETURN_IF_ERROR(parse_optimizer(j.value("optimizer", Json::object()), o.optimizer));
  KEVIN_RETURN_IF_ERROR(parse_lora(j.value("lora", Json::object()), o.lora));
  KEVIN_RETURN_IF_ERROR(parse_export(j.value("export", Json::object()), o));
  return o;
}

Json to_json(const TrainerOptions& o) {
  Json rollout = rollout::to_json(o.rollout);
  const auto& first = o.rollout.allocations.front();
  rollout["trajectories"] = first.trajectories;
  rollout["turns"] = first.turns;
  rollout.erase("allocations");
  rollout.erase("search");
  rollout.erase("beam_width");
  rollout.erase("beam_rounds");
  Json schedule = Json::array();
  for (const auto& change : o.max_tokens_schedule)
    schedule.push_back({{"step", change.step}, {"max_tokens", change.max_tokens}});
  rollout["max_tokens_schedule"] = schedule;
  return {
      {"model", o.model_dir.string()},
      {"out", o.out_dir.string()},
      {"steps", o.steps},
      {"tasks_per_step", o.tasks_per_step},
      {"holdout_every", o.holdout_every},
      {"checkpoint_every", o.checkpoint_every},
      {"keep_checkpoints", o.keep_checkpoints},
      {"seed", o.seed},
      {"rollout", rollout},
      {"grpo",
       {{"clip_low", o.update.grpo.clip_low},
        {"clip_high", o.update.grpo.clip_high},
        {"kl_beta", o.update.grpo.kl_beta},
        {"length_norm", length_norm_name(o.update.grpo.norm)},
        {"steps_per_batch", o.update.optimizer_steps},
        {"step_samples", o.step_samples == StepSamples::kSplit ? "split" : "whole_batch"},
        {"micro_batch", o.update.micro_batch},
        {"micro_batch_tokens", o.update.micro_batch_tokens},
        {"logit_chunk_rows", o.update.logit_chunk_rows},
        {"grad_clip", o.update.grad_clip},
        // 0: each step's response limit (a resolved number would pin L against the schedule).
        {"max_tokens", o.normalisation_follows_limit ? 0 : o.update.max_tokens}}},
      {"optimizer",
       {{"lr", o.optimizer.lr},
        {"weight_decay", o.optimizer.weight_decay},
        {"beta1", o.optimizer.beta1},
        {"beta2", o.optimizer.beta2},
        {"eps", o.optimizer.eps},
        {"warmup_steps", o.optimizer.warmup_steps},
        {"warmup_ratio", o.optimizer.warmup_ratio},
        {"state_on_host", o.optimizer.state_on_host}}},
      {"lora", {{"rank", o.lora.rank}, {"alpha", o.lora.alpha}, {"targets", o.lora.targets}}},
      {"activation_checkpointing", o.activation_checkpointing},
      {"device", o.device},
      {"precision", o.precision},
      {"open_think", o.open_think},
      {"not_okay_prefix", o.not_okay_prefix},
      {"export", {{"merged", o.export_merged}, {"lora", o.export_lora}, {"dtype", o.export_dtype}}},
      {"gpus", o.gpus.empty() ? Json("all") : Json(o.gpus)},
      {"cpu_replicas", o.cpu_replicas}};
}

int max_tokens_at(const TrainerOptions& o, int step) {
  int limit = o.rollout.generation.max_tokens;
  for (const auto& change : o.max_tokens_schedule) {
    if (change.step <= step) limit = change.max_tokens;
  }
  return limit;
}

int64_t normalisation_tokens_at(const TrainerOptions& o, int step) {
  return o.normalisation_follows_limit ? max_tokens_at(o, step) : o.update.max_tokens;
}

int64_t warmup_optimizer_steps(const TrainerOptions& o) {
  if (o.optimizer.warmup_ratio <= 0) return o.optimizer.warmup_steps;
  const double exact = o.optimizer.warmup_ratio * static_cast<double>(o.steps) *
                       static_cast<double>(o.update.optimizer_steps);
  // 0.07 × 100 is 7.000000000000001 in doubles: ceil of that would add a step.
  const double nearest = std::round(exact);
  if (std::abs(exact - nearest) <= 1e-9 * std::max(1.0, exact))
    return static_cast<int64_t>(nearest);
  return static_cast<int64_t>(std::ceil(exact));
}

torch::ScalarType base_dtype(const TrainerOptions& o, torch::Device device) {
  const bool bf16 = device.is_cuda() && o.precision != "fp32";
  return bf16 && o.lora.rank > 0 ? torch::kBFloat16 : torch::kFloat32;
}

int longest_answer(const TrainerOptions& o) {
  int limit = o.rollout.generation.max_tokens;
  for (const auto& change : o.max_tokens_schedule) limit = std::max(limit, change.max_tokens);
  return limit;
}

Status check_context_fits(const TrainerOptions& o, const Qwen2Config& model) {
  const auto sequence = static_cast<int64_t>(o.rollout.prompt.context_tokens) + longest_answer(o);
  if (sequence <= model.max_position_embeddings) return Status::ok();
  return invalid_argument("rollout.context_tokens (" +
                          std::to_string(o.rollout.prompt.context_tokens) +
                          ") + the longest answer (" + std::to_string(longest_answer(o)) +
                          ", rollout.max_tokens or its schedule) = " + std::to_string(sequence) +
                          " tokens, more than the model's max_position_embeddings (" +
                          std::to_string(model.max_position_embeddings) + "): lower one of them");
}

Workload workload_of(const TrainerOptions& o, torch::Device device, int replicas) {
  Workload w;
  w.base_bytes = base_dtype(o, device) == torch::kBFloat16 ? 2 : 4;
  w.checkpointing = o.activation_checkpointing;
  const auto answer = static_cast<int64_t>(longest_answer(o));
  const auto sequence = static_cast<int64_t>(o.rollout.prompt.context_tokens) + answer;
  const int64_t rows = o.update.micro_batch_tokens > 0
                           ? std::max<int64_t>(1, o.update.micro_batch_tokens / sequence)
                           : o.update.micro_batch;
  w.micro_batch_tokens = rows * sequence;
  w.scored_tokens = rows * answer;
  w.logit_chunk_rows = o.update.logit_chunk_rows;
  w.generation_sequences = (std::max(1, o.rollout.parallel) + replicas - 1) / replicas;
  w.generation_tokens = sequence;
  w.optimizer_on_host = o.optimizer.state_on_host;
  return w;
}

}  // namespace kevin::train
