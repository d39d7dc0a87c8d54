// records.cpp — strict field-by-field reading of trajectories.jsonl, then the checks that
// span lines (duplicates, beam lineage), so metrics never see an inconsistent run.
#include "report/records.h"

#include <map>
#include <set>
#include <tuple>

#include "report/jsonl.h"

namespace kevin::report {
namespace fs = std::filesystem;

namespace {

// An index field in [0, max] (max fits an int).
Result<int> as_index(const Json& v, std::string_view key, int max) {
  KEVIN_ASSIGN_OR_RETURN(const int64_t index, as_integer(v, key, max));
  return static_cast<int>(index);
}

Result<int> required_index(const Json& record, std::string_view key, int max) {
  KEVIN_ASSIGN_OR_RETURN(const int64_t index, required_integer(record, key, max));
  return static_cast<int>(index);
}

Status read_identity(const Json& record, TurnRow& row) {
  KEVIN_ASSIGN_OR_RETURN(row.task, required_string(record, "task"));
  KEVIN_ASSIGN_OR_RETURN(row.allocation, required_string(record, "allocation"));
  KEVIN_ASSIGN_OR_RETURN(row.trajectory, required_index(record, "trajectory", kMaxTrajectory));
  KEVIN_ASSIGN_OR_RETURN(row.turn, required_index(record, "turn", kMaxTurn));
  if (const Json* parent = find_value(record, "parent")) {
    KEVIN_ASSIGN_OR_RETURN(row.parent, as_index(*parent, "parent", kMaxTrajectory));
    if (*row.parent == row.trajectory) return field_error("parent", "names the trajectory itself");
  }
  return Status::ok();
}

Status read_outcome(const Json& record, TurnRow& row) {
  KEVIN_ASSIGN_OR_RETURN(const std::string verdict, required_string(record, "verdict"));
  const std::optional<VerdictKind> kind = verdict_from_name(verdict);
  // Quoted as JSON so a stray newline cannot break the one-line error.
  if (!kind) return field_error("verdict", "is not a verdict name: " + dump_json(Json(verdict)));
  row.verdict = *kind;
  KEVIN_ASSIGN_OR_RETURN(row.correct, required_bool(record, "correct"));
  if (row.correct != (row.verdict == VerdictKind::kCorrect)) {
    return field_error("correct", std::string(row.correct ? "is true" : "is false") +
                                      " but verdict is " + verdict);
  }
  KEVIN_ASSIGN_OR_RETURN(const std::optional<double> speedup, optional_amount(record, "speedup"));
  KEVIN_ASSIGN_OR_RETURN(const std::optional<double> roofline,
                         optional_amount(record, "roofline_fraction"));
  KEVIN_ASSIGN_OR_RETURN(const std::optional<double> baseline_roofline,
                         optional_amount(record, "baseline_roofline_fraction"));
  // Measurements are only meaningful for a correct kernel; anything else is ignored.
  if (row.correct) {
    row.speedup = speedup;
    row.roofline_fraction = roofline;
    row.baseline_roofline_fraction = baseline_roofline;
  }
  return Status::ok();
}

Status read_costs(const Json& record, TurnRow& row) {
  KEVIN_ASSIGN_OR_RETURN(const std::optional<double> generation_ms,
                         optional_amount(record, "generation_ms"));
  KEVIN_ASSIGN_OR_RETURN(const std::optional<double> compile_ms,
                         optional_amount(record, "compile_ms"));
  KEVIN_ASSIGN_OR_RETURN(const std::optional<double> eval_ms, optional_amount(record, "eval_ms"));
  row.generation_ms = generation_ms.value_or(0.0);
  row.compile_ms = compile_ms.value_or(0.0);
  row.eval_ms = eval_ms.value_or(0.0);
  KEVIN_ASSIGN_OR_RETURN(const std::string finish_reason, optional_string(record, "finish_reason"));
  row.truncated = finish_reason == "length";
  KEVIN_ASSIGN_OR_RETURN(row.cached_eval, optional_bool(record, "cached_eval"));
  return Status::ok();
}

// (task, allocation, trajectory): one trajectory of a run.
using TrajectoryKey = std::tuple<std::string, std::string, int>;
using FirstRows = std::map<TrajectoryKey, const TurnRow*>;

// Unique turns and one parent per trajectory; returns each trajectory's first row.
Result<FirstRows> index_trajectories(const fs::path& jsonl, const std::vector<TurnRow>& rows) {
  std::map<std::tuple<std::string, std::string, int, int>, size_t> seen_turns;
  FirstRows first_rows;
  for (const TurnRow& row : rows) {
    const auto [seen, fresh] = seen_turns.emplace(
        std::tuple(row.task, row.allocation, row.trajectory, row.turn), row.line);
    if (!fresh) {
      return line_error(jsonl, row.line,
                        invalid_argument("turn " + std::to_string(row.turn) + " of trajectory " +
                                         std::to_string(row.trajectory) + " repeats line " +
                                         std::to_string(seen->second)));
    }
    const auto [first, new_trajectory] =
        first_rows.emplace(TrajectoryKey(row.task, row.allocation, row.trajectory), &row);
    if (!new_trajectory && first->second->parent != row.parent) {
      return line_error(
          jsonl, row.line,
          invalid_argument("parent differs from line " + std::to_string(first->second->line) +
                           " of the same trajectory"));
    }
  }
  return first_rows;
}

// Every parent exists in the same (task, allocation) and no ancestry loops (a trajectory's
// history would be infinite). Chains already walked are not walked again.
Status check_parents(const fs::path& jsonl, const FirstRows& first_rows) {
  std::set<TrajectoryKey> rooted;
  for (const auto& [key, row] : first_rows) {
    std::vector<TrajectoryKey> chain = {key};
    std::set<int> ids = {row->trajectory};
    for (const TurnRow* at = row; at->parent && !rooted.contains(chain.back());) {
      const TrajectoryKey parent_key(row->task, row->allocation, *at->parent);
      const auto parent = first_rows.find(parent_key);
      if (parent == first_rows.end()) {
        return line_error(jsonl, at->line,
                          invalid_argument("parent " + std::to_string(*at->parent) +
                                           " is not a trajectory of this task and allocation"));
      }
      if (!ids.insert(*at->parent).second) {
        return line_error(
            jsonl, row->line,
            invalid_argument("the ancestry of trajectory " + std::to_string(row->trajectory) +
                             " has a parent cycle"));
      }
      chain.push_back(parent_key);
      at = parent->second;
    }
    rooted.insert(chain.begin(), chain.end());
  }
  return Status::ok();
}

}  // namespace

Result<TurnRow> turn_row_from_json(const Json& record) {
  if (!record.is_object()) return invalid_argument("expected a JSON object");
  TurnRow row;
  KEVIN_RETURN_IF_ERROR(read_identity(record, row));
  KEVIN_RETURN_IF_ERROR(read_outcome(record, row));
  KEVIN_RETURN_IF_ERROR(read_costs(record, row));
  return row;
}

Result<std::vector<TurnRow>> read_trajectories(const fs::path& jsonl) {
  KEVIN_ASSIGN_OR_RETURN(std::vector<TurnRow> rows,
                         read_json_rows<TurnRow>(jsonl, turn_row_from_json));
  KEVIN_ASSIGN_OR_RETURN(const FirstRows first_rows, index_trajectories(jsonl, rows));
  KEVIN_RETURN_IF_ERROR(check_parents(jsonl, first_rows));
  return rows;
}

}  // namespace kevin::report
