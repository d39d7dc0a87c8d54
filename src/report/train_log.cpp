// train_log.cpp — field-by-field reading of train_log.jsonl through the field tables, the
// line and summary JSON, and the one pass that summarises a training run.
#include "report/train_log.h"

#include "report/jsonl.h"

namespace kevin::report {
namespace fs = std::filesystem;

namespace {

Result<TrainLogKind> read_kind(const Json& object) {
  KEVIN_ASSIGN_OR_RETURN(const Json* v, require_value(object, "kind"));
  if (*v == "train") return TrainLogKind::kTrain;
  if (*v == "holdout") return TrainLogKind::kHoldout;
  // Quoted as JSON so a stray newline cannot break the one-line error.
  return field_error("kind", "must be \"train\" or \"holdout\", not " + dump_json(*v));
}

bool wanted(bool train_only, TrainLogKind kind) {
  return !train_only || kind == TrainLogKind::kTrain;
}

Status read_fields(const Json& object, TrainLogLine& line) {
  for (const TrainNumberField& f : kTrainNumberFields) {
    if (!wanted(f.train_only, line.kind)) continue;
    KEVIN_ASSIGN_OR_RETURN(line.*f.member, optional_number(object, f.key));
  }
  for (const TrainCountField& f : kTrainCountFields) {
    if (!wanted(f.train_only, line.kind)) continue;
    KEVIN_ASSIGN_OR_RETURN(line.*f.member, optional_integer(object, f.key, kNoUpperBound));
  }
  return Status::ok();
}

Json step_value_json(const std::optional<StepValue>& v) {
  if (!v) return nullptr;
  return {{"step", v->step}, {"value", v->value}};
}

template <typename T>
Json optional_json(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

// The higher of `best` and (step, value); the earlier one on ties.
std::optional<StepValue> higher(const std::optional<StepValue>& best, int64_t step,
                                const std::optional<double>& value) {
  if (!value || (best && best->value >= *value)) return best;
  return StepValue{step, *value};
}

void note_train(const TrainLogLine& line, TrainLogSummary& s) {
  ++s.train_steps;
  s.last_step = line.step;
  if (line.reward_mean) {
    if (!s.first_reward) s.first_reward = StepValue{line.step, *line.reward_mean};
    s.last_reward = StepValue{line.step, *line.reward_mean};
  }
  if (line.lr) s.last_lr = line.lr;
  s.rollout_s += line.rollout_s.value_or(0.0);
  s.update_s += line.update_s.value_or(0.0);
  s.samples += line.samples.value_or(0);
  s.train_tokens += line.train_tokens.value_or(0);
  s.last_train = line;
}

void note_holdout(const TrainLogLine& line, TrainLogSummary& s) {
  ++s.holdout_evals;
  s.best_holdout_reward = higher(s.best_holdout_reward, line.step, line.reward_mean);
  s.best_holdout_correct = higher(s.best_holdout_correct, line.step, line.correct_rate);
  s.last_holdout = line;
}

}  // namespace

const char* train_log_kind_name(TrainLogKind kind) {
  return kind == TrainLogKind::kTrain ? "train" : "holdout";
}

Result<TrainLogLine> train_log_line_from_json(const Json& object) {
  if (!object.is_object()) return invalid_argument("expected a JSON object");
  TrainLogLine line;
  KEVIN_ASSIGN_OR_RETURN(line.kind, read_kind(object));
  KEVIN_ASSIGN_OR_RETURN(line.step, required_integer(object, "step", kNoUpperBound));
  KEVIN_RETURN_IF_ERROR(read_fields(object, line));
  return line;
}

Result<std::vector<TrainLogLine>> read_train_log(const fs::path& jsonl) {
  return read_json_rows<TrainLogLine>(jsonl, train_log_line_from_json);
}

Json to_json(const TrainLogLine& line) {
  Json out = {{"kind", train_log_kind_name(line.kind)}, {"step", line.step}};
  for (const TrainCountField& f : kTrainCountFields) {
    if (const auto& v = line.*f.member) out[std::string(f.key)] = *v;
  }
  for (const TrainNumberField& f : kTrainNumberFields) {
    if (const auto& v = line.*f.member) out[std::string(f.key)] = *v;
  }
  return out;
}

TrainLogSummary summarize_train_log(const std::vector<TrainLogLine>& lines) {
  TrainLogSummary s;
  for (const TrainLogLine& line : lines) {
    if (line.kind == TrainLogKind::kTrain) {
      note_train(line, s);
    } else {
      note_holdout(line, s);
    }
  }
  return s;
}

Json to_json(const TrainLogSummary& s) {
  return {{"schema", "kevin.train_summary.v1"},
          {"train_steps", s.train_steps},
          {"holdout_evals", s.holdout_evals},
          {"last_step", optional_json(s.last_step)},
          {"reward_mean",
           {{"first", step_value_json(s.first_reward)}, {"last", step_value_json(s.last_reward)}}},
          {"best_holdout",
           {{"reward_mean", step_value_json(s.best_holdout_reward)},
            {"correct_rate", step_value_json(s.best_holdout_correct)}}},
          {"last_lr", optional_json(s.last_lr)},
          {"rollout_s", s.rollout_s},
          {"update_s", s.update_s},
          {"samples", s.samples},
          {"train_tokens", s.train_tokens},
          {"last_train", s.last_train ? to_json(*s.last_train) : Json(nullptr)},
          {"last_holdout", s.last_holdout ? to_json(*s.last_holdout) : Json(nullptr)}};
}

}  // namespace kevin::report
