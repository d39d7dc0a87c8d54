// train_log.h — the trainer's log (TRAIN_DIR/train_log.jsonl, written by `kevin train`: one
// JSON object per training step or holdout evaluation, in order) as typed, validated lines,
// and a summary of a training run (steps done, reward trend, best holdout, last lr, totals).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string_view>
#include <vector>

#include "core/json.h"
#include "core/status.h"

namespace kevin::report {

enum class TrainLogKind {
  kTrain,    // one optimisation step: rollout statistics plus the update's
  kHoldout,  // an evaluation on held-out tasks at a step: rollout statistics only
};

// The kind's name in the log: "train" or "holdout".
const char* train_log_kind_name(TrainLogKind kind);

// One line of the log. Optional fields are nullopt when absent or null.
struct TrainLogLine {
  TrainLogKind kind = TrainLogKind::kTrain;
  int64_t step = 0;
  // Rollout statistics, on every line.
  std::optional<int64_t> turns;
  std::optional<double> reward_mean;
  std::optional<double> correct_rate;  // fraction in [0, 1]
  std::optional<double> response_tokens_mean;
  std::optional<double> clip_ratio;      // fraction of responses cut at the length limit
  std::optional<double> speedup_mean;    // null in the log: no correct kernel
  std::optional<double> not_okay_ratio;  // null in the log: unknown
  // The update's statistics, on train lines only (read past on holdout lines).
  std::optional<double> loss, grad_norm, clip_fraction, entropy, kl, lr;
  std::optional<double> train_tokens_per_s, gen_tokens_per_s, rollout_s, sampling_s, update_s;
  std::optional<int64_t> samples, train_tokens;
  size_t line = 0;  // 1-based line in the file; 0 for lines built in code
};

// A numeric field of TrainLogLine and its key in the log, so reading, JSON, tables and charts
// treat the fields uniformly.
struct TrainNumberField {
  std::string_view key;
  std::optional<double> TrainLogLine::*member;
  bool train_only;
};

// An integer field (>= 0) of TrainLogLine and its key.
struct TrainCountField {
  std::string_view key;
  std::optional<int64_t> TrainLogLine::*member;
  bool train_only;
};

// Every numeric field, in the order of the log's documentation (docs/report.md).
inline constexpr std::array<TrainNumberField, 17> kTrainNumberFields = {{
    {"reward_mean", &TrainLogLine::reward_mean, false},
    {"correct_rate", &TrainLogLine::correct_rate, false},
    {"response_tokens_mean", &TrainLogLine::response_tokens_mean, false},
    {"clip_ratio", &TrainLogLine::clip_ratio, false},
    {"speedup_mean", &TrainLogLine::speedup_mean, false},
    {"not_okay_ratio", &TrainLogLine::not_okay_ratio, false},
    {"loss", &TrainLogLine::loss, true},
    {"grad_norm", &TrainLogLine::grad_norm, true},
    {"clip_fraction", &TrainLogLine::clip_fraction, true},
    {"entropy", &TrainLogLine::entropy, true},
    {"kl", &TrainLogLine::kl, true},
    {"lr", &TrainLogLine::lr, true},
    {"train_tokens_per_s", &TrainLogLine::train_tokens_per_s, true},
    {"gen_tokens_per_s", &TrainLogLine::gen_tokens_per_s, true},
    {"rollout_s", &TrainLogLine::rollout_s, true},
    {"sampling_s", &TrainLogLine::sampling_s, true},
    {"update_s", &TrainLogLine::update_s, true},
}};

// Every optional integer field.
inline constexpr std::array<TrainCountField, 3> kTrainCountFields = {{
    {"turns", &TrainLogLine::turns, false},
    {"samples", &TrainLogLine::samples, true},
    {"train_tokens", &TrainLogLine::train_tokens, true},
}};

// Converts one log object (line is left 0). Required: kind ("train" or "holdout"), step
// (integer >= 0). Optional (missing or null → nullopt): the fields of kTrainNumberFields
// (numbers) and kTrainCountFields (integers >= 0); train-only fields are not read on holdout
// lines. Anything else — not an object, a missing kind or step, an unknown kind, a wrong type —
// gives kInvalidArgument naming the field. Unknown keys are read past.
Result<TrainLogLine> train_log_line_from_json(const Json& object);

// Reads and validates a train_log.jsonl file (blank lines are skipped). Missing file →
// kNotFound; unreadable → kIoError; a line that is not JSON or a bad line (see
// train_log_line_from_json) → kInvalidArgument whose message starts "<path> line <N>:".
// Never throws.
Result<std::vector<TrainLogLine>> read_train_log(const std::filesystem::path& jsonl);

// The line as JSON: kind, step, then the fields that are present (absent ones are left out).
Json to_json(const TrainLogLine& line);

// A value and the step it was logged at.
struct StepValue {
  int64_t step = 0;
  double value = 0;
};

struct TrainLogSummary {
  int64_t train_steps = 0;                        // train lines
  int64_t holdout_evals = 0;                      // holdout lines
  std::optional<int64_t> last_step;               // step of the last train line
  std::optional<StepValue> first_reward;          // reward_mean of the first train line with one
  std::optional<StepValue> last_reward;           // ... and of the last
  std::optional<StepValue> best_holdout_reward;   // highest holdout reward_mean (earliest on ties)
  std::optional<StepValue> best_holdout_correct;  // highest holdout correct_rate (earliest on ties)
  std::optional<double> last_lr;                  // lr of the last train line with one
  double rollout_s = 0;                           // summed over train lines
  double update_s = 0;
  int64_t samples = 0;
  int64_t train_tokens = 0;
  std::optional<TrainLogLine> last_train;    // the last train line
  std::optional<TrainLogLine> last_holdout;  // the last holdout line
};

// The summary of `lines` in log order. Pure.
TrainLogSummary summarize_train_log(const std::vector<TrainLogLine>& lines);

// The summary as JSON (schema "kevin.train_summary.v1", described in docs/report.md); absent
// values are null.
Json to_json(const TrainLogSummary& summary);

}  // namespace kevin::report
