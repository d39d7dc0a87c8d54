// trainer_config.cpp — `kevin train`'s JSON config into TrainerOptions: defaults for every
// key left out, and errors naming the key for anything unknown, ill-typed or out of range.
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <type_traits>
#include <utility>

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

struct Section;

// One key of a section of the config, named once: how its value is read from the section's
// object into the options, and written back from them. The options' values before reading
// are the defaults (TrainerOptions in trainer.h states each one once); reading checks the type
// (an ill-typed value names "section: field"), the section's check_* function the range.
struct ConfigKey {
  std::string name;
  std::function<Status(const Json& section, const std::string& where, TrainerOptions& o)> read;
  std::function<Json(const TrainerOptions& o)> write;
  const Section* section = nullptr;  // the keys of a key that is a section of its own
};

struct Section {
  std::string where;  // how messages name it: "grpo", or "config" for the top level
  std::vector<ConfigKey> keys;
};

// A key whose value is the options' field that `field` names, as it is (`field`: a generic
// lambda from the options to a reference to the field).
template <typename Field>
ConfigKey plain(std::string name, Field field) {
  using T =
      std::remove_cv_t<std::remove_reference_t<decltype(field(std::declval<TrainerOptions&>()))>>;
  return {name,
          [name, field](const Json& j, const std::string& where, TrainerOptions& o) -> Status {
            T& slot = field(o);
            KEVIN_ASSIGN_OR_RETURN(slot, get_or<T>(j, where, name.c_str(), slot));
            return Status::ok();
          },
          [field](const TrainerOptions& o) { return Json(field(o)); }};
}

// A key whose value is a name for the options' field: `from_name` gives the value a name
// stands for (nullopt: not one of `names`), `to_name` the inverse.
template <typename Field, typename FromName, typename ToName>
ConfigKey named(std::string name, Field field, std::string names, FromName from_name,
                ToName to_name) {
  return {name,
          [=](const Json& j, const std::string& where, TrainerOptions& o) -> Status {
            KEVIN_ASSIGN_OR_RETURN(std::string given,
                                   get_or<std::string>(j, where, name.c_str(), to_name(field(o))));
            const auto value = from_name(given);
            if (!value) {
              return invalid_argument(where + "." + name + ": expected " + names + ", got \"" +
                                      given + "\"");
            }
            field(o) = *value;
            return Status::ok();
          },
          [=](const TrainerOptions& o) { return Json(to_name(field(o))); }};
}

std::set<std::string> key_names(const Section& section) {
  std::set<std::string> names;
  for (const ConfigKey& k : section.keys) names.insert(k.name);
  return names;
}

// Reads every key of `section` present in `j` (an object; unknown keys are errors unless
// `also_allowed` names them); `quoted` names the section in those errors.
Status read_section(const Json& j, const Section& section, const std::string& quoted,
                    TrainerOptions& o, const std::vector<std::string>& also_allowed = {}) {
  std::set<std::string> allowed = key_names(section);
  allowed.insert(also_allowed.begin(), also_allowed.end());
  KEVIN_RETURN_IF_ERROR(check_keys(j, quoted, allowed));
  for (const ConfigKey& k : section.keys) KEVIN_RETURN_IF_ERROR(k.read(j, section.where, o));
  return Status::ok();
}

Json write_section(const Section& section, const TrainerOptions& o) {
  Json j = Json::object();
  for (const ConfigKey& k : section.keys) j[k.name] = k.write(o);
  return j;
}

// A key holding a section of its own (an object, empty when left out).
ConfigKey subsection(const Section& section) {
  return {section.where,
          [&section](const Json& j, const std::string&, TrainerOptions& o) {
            return read_section(j.value(section.where, Json::object()), section,
                                "\"" + section.where + "\"", o);
          },
          [&section](const TrainerOptions& o) { return write_section(section, o); }, &section};
}

const Section& grpo_section() {
  static const Section s{
      "grpo",
      {plain(
           "clip_low", [](auto& o) -> auto& { return o.update.grpo.clip_low; }),
       plain(
           "clip_high", [](auto& o) -> auto& { return o.update.grpo.clip_high; }),
       plain(
           "kl_beta", [](auto& o) -> auto& { return o.update.grpo.kl_beta; }),
       named(
           "length_norm", [](auto& o) -> auto& { return o.update.grpo.norm; }, length_norm_names(),
           length_norm_from_name, length_norm_name),
       plain(
           "steps_per_batch", [](auto& o) -> auto& { return o.update.optimizer_steps; }),
       named(
           "step_samples", [](auto& o) -> auto& { return o.step_samples; }, "whole_batch or split",
           [](const std::string& n) -> std::optional<StepSamples> {
             if (n == "whole_batch") return StepSamples::kWholeBatch;
             if (n == "split") return StepSamples::kSplit;
             return std::nullopt;
           },
           [](StepSamples v) {
             return std::string(v == StepSamples::kSplit ? "split" : "whole_batch");
           }),
       plain(
           "micro_batch", [](auto& o) -> auto& { return o.update.micro_batch; }),
       plain(
           "micro_batch_tokens", [](auto& o) -> auto& { return o.update.micro_batch_tokens; }),
       plain(
           "logit_chunk_rows", [](auto& o) -> auto& { return o.update.logit_chunk_rows; }),
       plain(
           "grad_clip", [](auto& o) -> auto& { return o.update.grad_clip; }),
       // Written as 0 where it follows each step's response limit (a resolved number would
       // pin L against the schedule).
       {"max_tokens",
        [](const Json& j, const std::string& where, TrainerOptions& o) -> Status {
          KEVIN_ASSIGN_OR_RETURN(o.update.max_tokens,
                                 get_or<int64_t>(j, where, "max_tokens", o.update.max_tokens));
          o.normalisation_follows_limit = o.update.max_tokens == 0;
          return Status::ok();
        },
        [](const TrainerOptions& o) {
          return Json(o.normalisation_follows_limit ? 0 : o.update.max_tokens);
        }}}};
  return s;
}

const Section& optimizer_section() {
  static const Section s{
      "optimizer",
      {plain(
           "lr", [](auto& o) -> auto& { return o.optimizer.lr; }),
       plain(
           "weight_decay", [](auto& o) -> auto& { return o.optimizer.weight_decay; }),
       plain(
           "beta1", [](auto& o) -> auto& { return o.optimizer.beta1; }),
       plain(
           "beta2", [](auto& o) -> auto& { return o.optimizer.beta2; }),
       plain(
           "eps", [](auto& o) -> auto& { return o.optimizer.eps; }),
       plain(
           "warmup_steps", [](auto& o) -> auto& { return o.optimizer.warmup_steps; }),
       plain(
           "warmup_ratio", [](auto& o) -> auto& { return o.optimizer.warmup_ratio; }),
       plain(
           "state_on_host", [](auto& o) -> auto& { return o.optimizer.state_on_host; })}};
  return s;
}

const Section& lora_section() {
  static const Section s{"lora",
                         {plain(
                              "rank", [](auto& o) -> auto& { return o.lora.rank; }),
                          plain(
                              "alpha", [](auto& o) -> auto& { return o.lora.alpha; }),
                          plain(
                              "targets", [](auto& o) -> auto& { return o.lora.targets; })}};
  return s;
}

const Section& export_section() {
  static const Section s{"export",
                         {plain(
                              "merged", [](auto& o) -> auto& { return o.export_merged; }),
                          plain(
                              "lora", [](auto& o) -> auto& { return o.export_lora; }),
                          plain(
                              "dtype", [](auto& o) -> auto& { return o.export_dtype; })}};
  return s;
}

// "model" and "out": required paths.
ConfigKey required_path(std::string name, std::filesystem::path TrainerOptions::*field) {
  return {name,
          [name, field](const Json& j, const std::string&, TrainerOptions& o) -> Status {
            KEVIN_ASSIGN_OR_RETURN(std::string path, json_get<std::string>(j, name));
            o.*field = path;
            return Status::ok();
          },
          [field](const TrainerOptions& o) { return Json((o.*field).string()); }};
}

// "rollout": kevin run's section (rollout::RolloutConfig's own keys), with the trainer's
// shorthand for its one allocation and its response-limit schedule.
ConfigKey rollout_key() {
  return {"rollout",
          [](const Json& j, const std::string&, TrainerOptions& o) -> Status {
            const Json rollout = j.value("rollout", Json::object());
            KEVIN_ASSIGN_OR_RETURN(o.rollout, parse_rollout(rollout));
            KEVIN_ASSIGN_OR_RETURN(o.max_tokens_schedule, parse_max_tokens_schedule(rollout));
            return Status::ok();
          },
          [](const TrainerOptions& o) {
            Json rollout = rollout::to_json(o.rollout);
            const auto& first = o.rollout.allocations.front();
            rollout["trajectories"] = first.trajectories;
            rollout["turns"] = first.turns;
            for (const char* search_only : {"allocations", "search", "beam_width", "beam_rounds"})
              rollout.erase(search_only);
            Json schedule = Json::array();
            for (const auto& change : o.max_tokens_schedule)
              schedule.push_back({{"step", change.step}, {"max_tokens", change.max_tokens}});
            rollout["max_tokens_schedule"] = schedule;
            return rollout;
          }};
}

// "gpus": "all" (every visible GPU: an empty list) or a list of ordinals.
ConfigKey gpus_key() {
  return {"gpus",
          [](const Json& j, const std::string& where, TrainerOptions& o) -> Status {
            if (!j.contains("gpus") || j["gpus"] == "all") return Status::ok();
            KEVIN_ASSIGN_OR_RETURN(o.gpus, get_or<std::vector<int>>(j, where, "gpus", {}));
            if (o.gpus.empty())
              return invalid_argument("gpus: expected \"all\" or a non-empty list of GPU ordinals");
            return Status::ok();
          },
          [](const TrainerOptions& o) { return o.gpus.empty() ? Json("all") : Json(o.gpus); }};
}

const Section& top_section() {
  static const Section s{
      "config",
      {required_path("model", &TrainerOptions::model_dir),
       required_path("out", &TrainerOptions::out_dir),
       plain(
           "steps", [](auto& o) -> auto& { return o.steps; }),
       plain(
           "tasks_per_step", [](auto& o) -> auto& { return o.tasks_per_step; }),
       plain(
           "holdout_every", [](auto& o) -> auto& { return o.holdout_every; }),
       plain(
           "checkpoint_every", [](auto& o) -> auto& { return o.checkpoint_every; }),
       plain(
           "keep_checkpoints", [](auto& o) -> auto& { return o.keep_checkpoints; }),
       plain(
           "seed", [](auto& o) -> auto& { return o.seed; }),
       plain(
           "activation_checkpointing", [](auto& o) -> auto& { return o.activation_checkpointing; }),
       plain(
           "device", [](auto& o) -> auto& { return o.device; }),
       plain(
           "precision", [](auto& o) -> auto& { return o.precision; }),
       plain(
           "open_think", [](auto& o) -> auto& { return o.open_think; }),
       plain(
           "not_okay_prefix", [](auto& o) -> auto& { return o.not_okay_prefix; }),
       plain(
           "cpu_replicas", [](auto& o) -> auto& { return o.cpu_replicas; }),
       gpus_key(),
       rollout_key(),
       subsection(grpo_section()),
       subsection(optimizer_section()),
       subsection(lora_section()),
       subsection(export_section())}};
  return s;
}

// Ranges, after every key is read (some rules span keys).
Status check_schedule_and_runtime(const TrainerOptions& o) {
  KEVIN_RETURN_IF_ERROR(at_least("steps", o.steps, 1));
  KEVIN_RETURN_IF_ERROR(at_least("tasks_per_step", o.tasks_per_step, 1));
  KEVIN_RETURN_IF_ERROR(at_least("holdout_every", o.holdout_every, 0));
  KEVIN_RETURN_IF_ERROR(at_least("checkpoint_every", o.checkpoint_every, 1));
  KEVIN_RETURN_IF_ERROR(at_least("keep_checkpoints", o.keep_checkpoints, 1));
  KEVIN_RETURN_IF_ERROR(at_least("cpu_replicas", o.cpu_replicas, 1));
  for (int g : o.gpus) KEVIN_RETURN_IF_ERROR(at_least("gpus", g, 0));
  if (std::set<int>(o.gpus.begin(), o.gpus.end()).size() != o.gpus.size())
    return invalid_argument("gpus: a GPU is listed twice");
  if (o.device != "auto" && o.device != "cuda" && o.device != "cpu")
    return invalid_argument("device: expected auto, cuda or cpu");
  if (o.precision != "auto" && o.precision != "bf16" && o.precision != "fp32")
    return invalid_argument("precision: expected auto, bf16 or fp32");
  return Status::ok();
}

Status check_grpo(const UpdateConfig& u) {
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
  return Status::ok();
}

Status check_optimizer(const OptimizerConfig& o) {
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

Status check_lora_and_export(const TrainerOptions& o) {
  KEVIN_RETURN_IF_ERROR(at_least("lora.rank", static_cast<double>(o.lora.rank), 0));
  if (!(o.lora.alpha > 0)) return invalid_argument("lora.alpha must be positive");
  if (o.export_dtype != "bfloat16" && o.export_dtype != "float16" && o.export_dtype != "float32")
    return invalid_argument("export.dtype: expected bfloat16, float16 or float32");
  return Status::ok();
}

}  // namespace

Result<TrainerOptions> trainer_options_from_json(const Json& j) {
  TrainerOptions o;
  o.source = j;
  KEVIN_RETURN_IF_ERROR(read_section(j, top_section(), "the config", o, kCallerConfigKeys));
  KEVIN_RETURN_IF_ERROR(check_schedule_and_runtime(o));
  KEVIN_RETURN_IF_ERROR(check_grpo(o.update));
  o.update.temperature = o.rollout.generation.temperature;
  if (o.update.temperature <= 0)
    return invalid_argument("rollout.temperature must be positive for training");
  if (o.update.max_tokens == 0) o.update.max_tokens = o.rollout.generation.max_tokens;
  KEVIN_RETURN_IF_ERROR(check_optimizer(o.optimizer));
  KEVIN_RETURN_IF_ERROR(check_lora_and_export(o));
  return o;
}

Json to_json(const TrainerOptions& o) { return write_section(top_section(), o); }

std::vector<std::string> trainer_config_keys() {
  std::vector<std::string> names;
  for (const ConfigKey& k : top_section().keys) {
    names.push_back(k.name);
    if (k.section == nullptr) continue;
    for (const ConfigKey& inner : k.section->keys) names.push_back(k.name + "." + inner.name);
  }
  return names;
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
