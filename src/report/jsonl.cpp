// jsonl.cpp — field access with one-line errors naming the field, and the line-by-line reader
// that prefixes every error with the file and line.
#include "report/jsonl.h"

#include <cmath>
#include <fstream>
#include <system_error>

namespace kevin::report {
namespace fs = std::filesystem;

Status field_error(std::string_view key, std::string_view what) {
  return invalid_argument("field \"" + std::string(key) + "\" " + std::string(what));
}

Status line_error(const fs::path& jsonl, size_t line, const Status& cause) {
  return invalid_argument(jsonl.string() + " line " + std::to_string(line) + ": " +
                          cause.message());
}

const Json* find_value(const Json& record, std::string_view key) {
  const auto it = record.find(key);
  return it == record.end() || it->is_null() ? nullptr : &*it;
}

Result<const Json*> require_value(const Json& record, std::string_view key) {
  const Json* v = find_value(record, key);
  if (v == nullptr) return field_error(key, "is missing");
  return v;
}

Result<int64_t> as_integer(const Json& v, std::string_view key, int64_t max) {
  if (!v.is_number_integer()) return field_error(key, "must be an integer");
  // Parsed non-negative numbers are stored unsigned, numbers built in code signed.
  const bool in_range = v.is_number_unsigned() ? v.get<uint64_t>() <= static_cast<uint64_t>(max)
                                               : v.get<int64_t>() >= 0 && v.get<int64_t>() <= max;
  if (!in_range) {
    return field_error(key, max == kNoUpperBound ? "must be an integer >= 0"
                                                 : "must be between 0 and " + std::to_string(max));
  }
  return v.get<int64_t>();
}

Result<int64_t> required_integer(const Json& record, std::string_view key, int64_t max) {
  KEVIN_ASSIGN_OR_RETURN(const Json* v, require_value(record, key));
  return as_integer(*v, key, max);
}

Result<std::optional<int64_t>> optional_integer(const Json& record, std::string_view key,
                                                int64_t max) {
  const Json* v = find_value(record, key);
  if (v == nullptr) return std::optional<int64_t>();
  KEVIN_ASSIGN_OR_RETURN(const int64_t value, as_integer(*v, key, max));
  return std::optional<int64_t>(value);
}

Result<std::string> required_string(const Json& record, std::string_view key) {
  KEVIN_ASSIGN_OR_RETURN(const Json* v, require_value(record, key));
  if (!v->is_string() || v->get_ref<const std::string&>().empty())
    return field_error(key, "must be a non-empty string");
  return v->get<std::string>();
}

Result<std::string> optional_string(const Json& record, std::string_view key) {
  const Json* v = find_value(record, key);
  if (v == nullptr) return std::string();
  if (!v->is_string()) return field_error(key, "must be a string");
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

Result<std::optional<double>> optional_number(const Json& record, std::string_view key) {
  const Json* v = find_value(record, key);
  if (v == nullptr) return std::optional<double>();
  if (!v->is_number()) return field_error(key, "must be a number");
  return std::optional<double>(v->get<double>());
}

Result<std::optional<double>> optional_amount(const Json& record, std::string_view key) {
  KEVIN_ASSIGN_OR_RETURN(const std::optional<double> x, optional_number(record, key));
  if (x && (!std::isfinite(*x) || *x < 0)) return field_error(key, "must be a finite number >= 0");
  return x;
}

Status read_json_lines(const fs::path& jsonl, const JsonLineVisitor& visit) {
  std::error_code ec;
  if (!fs::exists(jsonl, ec)) return not_found("no such file: " + jsonl.string());
  if (fs::is_directory(jsonl, ec)) return io_error(jsonl.string() + " is a directory");
  std::ifstream in(jsonl, std::ios::binary);
  if (!in) return io_error("cannot open " + jsonl.string());
  std::string text;
  for (size_t line = 1; std::getline(in, text); ++line) {
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto value = parse_json(text);
    if (!value.is_ok()) return line_error(jsonl, line, value.status());
    const Status visited = visit(*value, line);
    if (!visited.is_ok()) return line_error(jsonl, line, visited);
  }
  if (in.bad()) return io_error("error reading " + jsonl.string());
  return Status::ok();
}

}  // namespace kevin::report
