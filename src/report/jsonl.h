// jsonl.h — what the report's JSON-lines readers (trajectories.jsonl, train_log.jsonl) share:
// reading a file object by object with errors that name the line, and typed field access
// whose errors name the field ("field \"turn\" must be an integer").
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.h"
#include "core/status.h"

namespace kevin::report {

// The largest integer field value when a field has no upper bound of its own.
inline constexpr int64_t kNoUpperBound = std::numeric_limits<int64_t>::max();

// kInvalidArgument "field \"<key>\" <what>".
Status field_error(std::string_view key, std::string_view what);

// kInvalidArgument "<path> line <line>: <cause's message>".
Status line_error(const std::filesystem::path& jsonl, size_t line, const Status& cause);

// The value of `key` in `record`, or nullptr when it is absent or null.
const Json* find_value(const Json& record, std::string_view key);

// The value of `key`; absent or null → "is missing".
Result<const Json*> require_value(const Json& record, std::string_view key);

// `v` as an integer in [0, max]; otherwise "must be an integer" or a range error naming max
// ("must be between 0 and 9999", or "must be an integer >= 0" when max is kNoUpperBound).
Result<int64_t> as_integer(const Json& v, std::string_view key, int64_t max);

// A required integer in [0, max]; errors as require_value and as_integer.
Result<int64_t> required_integer(const Json& record, std::string_view key, int64_t max);

// An integer in [0, max], or nullopt when absent or null; errors as as_integer.
Result<std::optional<int64_t>> optional_integer(const Json& record, std::string_view key,
                                                int64_t max);

// A required non-empty string; otherwise "is missing" or "must be a non-empty string".
Result<std::string> required_string(const Json& record, std::string_view key);

// A string, or "" when absent or null; otherwise "must be a string".
Result<std::string> optional_string(const Json& record, std::string_view key);

// A required bool; otherwise "is missing" or "must be true or false".
Result<bool> required_bool(const Json& record, std::string_view key);

// A bool, or false when absent or null; otherwise "must be true or false".
Result<bool> optional_bool(const Json& record, std::string_view key);

// A number (any sign; JSON numbers are always finite), or nullopt when absent or null;
// otherwise "must be a number".
Result<std::optional<double>> optional_number(const Json& record, std::string_view key);

// A number >= 0 (times, speedups), or nullopt when absent or null; otherwise "must be a
// number" or "must be a finite number >= 0".
Result<std::optional<double>> optional_amount(const Json& record, std::string_view key);

// Called with each parsed line and its 1-based line number; an error stops the reading.
using JsonLineVisitor = std::function<Status(const Json& value, size_t line)>;

// Reads `jsonl` line by line, skipping blank lines (spaces, tabs, CR), and hands each parsed
// line to `visit`. Missing file → kNotFound; a folder or unreadable file → kIoError; a line
// that is not JSON, or an error from `visit`, → kInvalidArgument "<path> line <N>: <why>".
Status read_json_lines(const std::filesystem::path& jsonl, const JsonLineVisitor& visit);

// Every line of `jsonl` parsed by `parse` (Json → Result<Row>) into a Row whose `line` member
// is then set to its line number. Errors as read_json_lines.
template <typename Row, typename Parse>
Result<std::vector<Row>> read_json_rows(const std::filesystem::path& jsonl, Parse parse) {
  std::vector<Row> rows;
  KEVIN_RETURN_IF_ERROR(
      read_json_lines(jsonl, [&rows, &parse](const Json& value, size_t line) -> Status {
        KEVIN_ASSIGN_OR_RETURN(Row row, parse(value));
        row.line = line;
        rows.push_back(std::move(row));
        return Status::ok();
      }));
  return rows;
}

}  // namespace kevin::report
