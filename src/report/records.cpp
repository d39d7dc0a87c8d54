// records.cpp — strict field-by-field reading of trajectories.jsonl, then the checks that
// span lines (duplicates, beam lineage), so metrics never see an inconsistent run.
#include "report/records.h"

#include <cmath>
#include <cstdint>
#include <fstream>
#include <map>
#include <set>
#include <tuple>

namespace kevin::report {
namespace fs = std::filesystem;

namespace {

Status field_error(std::string_view key, std::string_view what) {
  return invalid_argument("field \"" + std::string(key) + "\" " + std::string(what));
}

// The value of `key`, or nullptr when it is absent or null.
const Json* find_value(const Json& record, std::string_view key) {
  const auto it = record.find(key);
  return it == record.end() || it->is_null() ? nullptr : &*it;
}

Result<const Json*> require_value(const Json& record, std::string_view key) {
  const Json* v = find_value(record, key);
  if (v == nullptr) return field_error(key, "is missing");
  return v;
}

Result<int> as_index(const Json& v, std::string_view key, int max) {
  if (!v.is_number_integer()) return field_error(key, "must be an integer");
  // Parsed non-negative numbers are stored unsigned, numbers built in code signed.
  const bool in_range = v.is_number_unsigned() ? v.get<uint64_t>() <= static_cast<uint64_t>(max)
                                               : v.get<int64_t>() >= 0 && v.get<int64_t>() <= max;
  if (!in_range) return field_error(key, "must be between 0 and " + std::to_string(max));
  return static_cast<int>(v.get<int64_t>());
}

Result<int> required_index(const Json& record, std::string_view key, int max) {
  KEVIN_ASSIGN_OR_RETURN(const Json* v, require_value(record, key));
  return as_index(*v, key, max);
}

Result<std::string> required_string(const Json& record, std::string_view key) {
  KEVIN_ASSIGN_OR_RETURN(const Json* v, require_value(record, key));
  if (!v->is_string() || v->get_ref<const std::string&>().empty()) return field_error(key, "must be a non-empty string");
  return v->get<std::string>();
}

Result<bool> required_bool(const Json& record, std::string_view key) {
  KEVIN_ASSIGN_OR_RETURN(const Json* v, require_value(record, key));
  if (!v->is_boolean()) return field_error(key, "must be true or false");
  return v->get<bool>();
}

Result<bool> optional_bool(const Json& record, std::string_view key) {
  const Json* v = find_value(record, key);
  if (v == nullptr) return false;
  if (!v->is_boolean()) return field_error(key, "must be true or false");
  return v->get<bool>();
}

// A finite number >= 0 (times, speedups), or nullopt when absent.
Result<std::optional<double>> optional_amount(const Json& record, std::string_view key) {
  const Json* v = find_value(record, key);
  if (v == nullptr) return std::optional<double>();
  if (!v->is_number()) return field_error(key, "must be a number");
  const double x = v->get<double>();
  if (!std::isfinite(x) || x < 0) return field_error(key, "must be a finite number >= 0");
  return std::optional<double>(x);
}

Result<std::string> optional_string(const Json& record, std::string_view key) {
  const Json* v = find_value(record, key);
  if (v == nullptr) return std::string();
  if (!v->is_string()) return field_error(key, "must be a string");
  return v->get<std::string>();
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
    return field_error("correct", std::string(row.correct ? "is true" : "is false") + " but verdict is " + verdict);
  }
  KEVIN_ASSIGN_OR_RETURN(const std::optional<double> speedup, optional_amount(record, "speedup"));
  // A speedup is only meaningful for a correct kernel; anything else is ignored.
  if (row.correct) row.speedup = speedup;
  return Status::ok();
}

Status read_costs(const Json& record, TurnRow& row) {
  KEVIN_ASSIGN_OR_RETURN(const std::optional<double> generation_ms, optional_amount(record, "generation_ms"));
  KEVIN_ASSIGN_OR_RETURN(const std::optional<double> compile_ms, optional_amount(record, "compile_ms"));
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

Status line_error(const fs::path& jsonl, size_t line, const Status& cause) {
  return invalid_argument(jsonl.string() + " line " + std::to_string(line) + ": " + cause.message());
}

// Unique turns and one parent per trajectory; returns each trajectory's first row.
Result<FirstRows> index_trajectories(const fs::path& jsonl, const std::vector<TurnRow>& rows) {
  std::map<std::tuple<std::string, std::string, int, int>, size_t> seen_turns;
  FirstRows first_rows;
  for (const TurnRow& row : rows) {
    const auto [seen, fresh] = seen_turns.emplace(std::tuple(row.task, row.allocation, row.trajectory, row.turn), row.line);
    if (!fresh) {
      return line_error(jsonl, row.line, invalid_argument("turn " + std::to_string(row.turn) + " of trajectory " +
                                                          std::to_string(row.trajectory) + " repeats line " +
                                                          std::to_string(seen->second)));
    }
    const auto [first, new_trajectory] = first_rows.emplace(TrajectoryKey(row.task, row.allocation, row.trajectory), &row);
    if (!new_trajectory && first->second->parent != row.parent) {
      return line_error(jsonl, row.line, invalid_argument("parent differs from line " + std::to_string(first->second->line) +
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
        return line_error(jsonl, at->line, invalid_argument("parent " + std::to_string(*at->parent) +
                                                            " is not a trajectory of this task and allocation"));
      }
      if (!ids.insert(*at->parent).second) {
        return line_error(jsonl, row->line, invalid_argument("the ancestry of trajectory " + std::to_string(row->trajectory) +
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
  std::error_code ec;
  if (!fs::exists(jsonl, ec)) return not_found("no such file: " + jsonl.string());
  if (fs::is_directory(jsonl, ec)) return io_error(jsonl.string() + " is a directory");
  std::ifstream in(jsonl, std::ios::binary);
  if (!in) return io_error("cannot open " + jsonl.string());
  std::vector<TurnRow> rows;
  std::string text;
  for (size_t line = 1; std::getline(in, text); ++line) {
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto record = parse_json(text);
    if (!record.is_ok()) return line_error(jsonl, line, record.status());
    auto row = turn_row_from_json(*record);
    if (!row.is_ok()) return line_error(jsonl, line, row.status());
    row->line = line;
    rows.push_back(std::move(row).value());
  }
  if (in.bad()) return io_error("error reading " + jsonl.string());
  KEVIN_ASSIGN_OR_RETURN(const FirstRows first_rows, index_trajectories(jsonl, rows));
  KEVIN_RETURN_IF_ERROR(check_parents(jsonl, first_rows));
  return rows;
}

}  // namespace kevin::report
