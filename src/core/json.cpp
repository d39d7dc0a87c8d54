// json.cpp — the non-throwing wrappers around nlohmann::json.
#include "core/json.h"

#include <algorithm>

namespace kevin {

namespace {

// The deepest nesting of arrays and objects in `text`, stopping early once past `limit`.
// Brackets inside strings do not count; malformed text is the parser's to report.
int nesting_depth(std::string_view text, int limit) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
      if (deepest > limit) return deepest;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

}  // namespace

namespace detail {

std::string plain_message(const Json::exception& e) {
  const std::string_view what = e.what();
  const size_t tag_end = what.rfind("] ", what.find(' '));
  return std::string(
      what.substr(what.front() == '[' && tag_end != std::string_view::npos ? tag_end + 2 : 0));
}

}  // namespace detail

Result<Json> parse_json(std::string_view text, const JsonLimits& limits) {
  if (text.size() > limits.max_bytes) {
    return invalid_argument("JSON document of " + std::to_string(text.size()) +
                            " bytes exceeds the limit of " + std::to_string(limits.max_bytes));
  }
  if (nesting_depth(text, limits.max_depth) > limits.max_depth) {
    return invalid_argument("JSON nested deeper than " + std::to_string(limits.max_depth) +
                            " levels");
  }
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const Json::exception& e) {
    return invalid_argument("malformed JSON: " + detail::plain_message(e));
  }
}

Result<std::vector<Json>> parse_json_lines(std::string_view text) {
  std::vector<Json> docs;
  size_t line_no = 0;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    ++line_no;
    const std::string_view line = text.substr(start, end - start);
    if (line.find_first_not_of(" \t\r") != std::string_view::npos) {
      auto doc = parse_json(line);
      if (!doc.is_ok()) return doc.status().with_context("line " + std::to_string(line_no));
      docs.push_back(std::move(doc).value());
    }
    start = end + 1;
  }
  return docs;
}

std::string dump_json(const Json& value, int indent) {
  return value.dump(indent, ' ', false, Json::error_handler_t::replace);
}

}  // namespace kevin
