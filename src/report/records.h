// records.h — a run's per-turn records (RUN_DIR/trajectories.jsonl, written by the rollout:
// one JSON object per turn) as typed, validated rows. Only the fields that metrics and reports
// use are kept; prompts, responses, code and feedback text are read past, not stored.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/status.h"
#include "core/verdict.h"

namespace kevin::report {

// Largest accepted turn and trajectory index: far beyond any real run, small enough that the
// per-turn curves stay bounded.
inline constexpr int kMaxTurn = 9999;
inline constexpr int kMaxTrajectory = 9'999'999;

// One turn of one trajectory.
struct TurnRow {
  std::string task;           // e.g. "level1/001_square_matmul"
  std::string allocation;     // "MxN" (e.g. "16x8") or "beam"
  int trajectory = 0;         // unique within (task, allocation)
  int turn = 0;               // 0-based position in the trajectory's full history
  std::optional<int> parent;  // beam runs: the trajectory whose earlier turns this one continues
  VerdictKind verdict = VerdictKind::kParseError;
  bool correct = false;
  std::optional<double> speedup;  // finite, >= 0; kept only for correct kernels
  // Fractions of the roofline bound (speed of light, docs/eval.md) the kernel and the eager
  // baseline reached; finite, >= 0; kept only for correct kernels.
  std::optional<double> roofline_fraction, baseline_roofline_fraction;
  double generation_ms = 0;
  double compile_ms = 0;
  double eval_ms = 0;
  bool truncated = false;  // finish_reason was "length"
  bool cached_eval = false;
  size_t line = 0;  // 1-based line in the file; 0 for rows built in code
};

// Converts one record to a row (line is left 0). Required: task, allocation (non-empty
// strings), trajectory, turn (integers in [0, kMaxTrajectory] / [0, kMaxTurn]), verdict (a
// verdict name), correct (bool, true exactly when verdict is "correct"). Optional (missing or
// null → default): parent (integer, not the trajectory itself), speedup, roofline_fraction and
// baseline_roofline_fraction (finite numbers >= 0),
// generation_ms, compile_ms, eval_ms (finite numbers >= 0), finish_reason (string), cached_eval
// (bool). Any violation gives kInvalidArgument naming the field.
Result<TurnRow> turn_row_from_json(const Json& record);

// Reads and validates a trajectories.jsonl file (blank lines are skipped). Missing file →
// kNotFound; unreadable → kIoError; anything malformed → kInvalidArgument whose message starts
// "<path> line <N>:" — a line that is not JSON, a bad record (see turn_row_from_json), a
// repeated (task, allocation, trajectory, turn), a trajectory whose records disagree on
// parent, a parent missing from its (task, allocation), or a parent cycle. Never throws.
Result<std::vector<TurnRow>> read_trajectories(const std::filesystem::path& jsonl);

}  // namespace kevin::report
