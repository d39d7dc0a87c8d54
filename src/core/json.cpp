// json.cpp — the non-throwing wrappers around nlohmann::json.
#include "core/json.h"

namespace kevin {

Result<Json> parse_json(std::string_view text) {
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const Json::exception& e) {
    return invalid_argument(std::string("malformed JSON: ") + e.what());
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
