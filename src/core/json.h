// json.h — JSON on nlohmann::json with errors as values: parsing, typed field access and
// JSON-lines, none of which throw across this boundary.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace kevin {

using Json = nlohmann::json;

// Bounds on a document from an untrusted writer, checked before anything is built from it,
// so that neither memory nor recursion (here or in a later dump) follows the input.
struct JsonLimits {
  size_t max_bytes = SIZE_MAX;
  int max_depth = 256;  // arrays and objects nested inside each other
};

// Parses one JSON document. Malformed text, or text beyond `limits`, gives kInvalidArgument
// naming the byte offset or the limit.
Result<Json> parse_json(std::string_view text, const JsonLimits& limits = {});

// Parses JSON-lines: one document per non-blank line. The first bad line gives
// kInvalidArgument naming its line number.
Result<std::vector<Json>> parse_json_lines(std::string_view text);

// Field `key` of object `obj` as T. Missing key → kNotFound, wrong type → kInvalidArgument;
// both messages name the key.
template <typename T>
Result<T> json_get(const Json& obj, std::string_view key) {
  if (!obj.is_object()) return invalid_argument("expected a JSON object");
  const auto it = obj.find(key);
  if (it == obj.end()) return not_found("missing field \"" + std::string(key) + "\"");
  try {
    return it->template get<T>();
  } catch (const Json::exception& e) {
    return invalid_argument("field \"" + std::string(key) + "\": " + e.what());
  }
}

// Like json_get, but a missing key (or null) gives `fallback`; a wrong type is still an error.
template <typename T>
Result<T> json_get_or(const Json& obj, std::string_view key, T fallback) {
  if (obj.is_object()) {
    const auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return fallback;
  }
  return json_get<T>(obj, key);
}

// Serialises without throwing: invalid UTF-8 in strings is replaced (U+FFFD), so candidate
// output and compiler logs can always be reported. indent < 0 gives one line.
std::string dump_json(const Json& value, int indent = -1);

}  // namespace kevin
