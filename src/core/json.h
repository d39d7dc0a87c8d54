// json.h — JSON on nlohmann::json with errors as values: parsing, typed field access and
// JSON-lines, none of which throw across this boundary.
#pragma once

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
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

namespace detail {

template <typename T>
struct IsVector : std::false_type {};
template <typename T, typename A>
struct IsVector<std::vector<T, A>> : std::true_type {};

// True when reading `value` as T would cast a float to an integer type it does not fit:
// undefined behaviour inside nlohmann, so json_get refuses such a value first.
template <typename T>
bool float_out_of_range(const Json& value) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    if (!value.is_number_float()) return false;
    // The cast truncates, and must land in [min, max]: below 2^digits, at or above -2^digits
    // (signed) or above -1 (unsigned). NaN fails both comparisons.
    const double d = value.get<double>();
    const double limit = std::ldexp(1.0, std::numeric_limits<T>::digits);
    return !(d < limit && (std::is_signed_v<T> ? d >= -limit : d > -1.0));
  } else if constexpr (IsVector<T>::value) {
    return value.is_array() &&
           std::any_of(value.begin(), value.end(), float_out_of_range<typename T::value_type>);
  } else {
    return false;
  }
}

// The library's message without its "[json.exception.type_error.302] " tag: what a user is
// shown ("type must be number, but is string").
std::string plain_message(const Json::exception& e);

}  // namespace detail

// Field `key` of object `obj` as T. Missing key → kNotFound, wrong type (or a number T cannot
// hold, where reading it would be undefined) → kInvalidArgument; both messages name the key.
template <typename T>
Result<T> json_get(const Json& obj, std::string_view key) {
  if (!obj.is_object()) return invalid_argument("expected a JSON object");
  const auto it = obj.find(key);
  if (it == obj.end()) return not_found("missing field \"" + std::string(key) + "\"");
  if (detail::float_out_of_range<T>(*it)) {
    return invalid_argument("field \"" + std::string(key) + "\": a number out of range");
  }
  try {
    return it->template get<T>();
  } catch (const Json::exception& e) {
    return invalid_argument("field \"" + std::string(key) + "\": " + detail::plain_message(e));
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
