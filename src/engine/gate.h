// gate.h — the static gate: checks a candidate's source text before anything compiles it and
// names the rule that refused it. Rules (the `rule` field):
//   source_empty, source_not_utf8, source_too_large (> 1 MiB), missing_entry_point,
//   include_not_allowed, compiler_flag_override, banned_construct.
// Comments and string literals are ignored when looking for constructs.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/backend.h"

namespace kevin::engine {

inline constexpr size_t kMaxSourceBytes = size_t{1} << 20;

// Why a gate refused a candidate.
struct Rejection {
  std::string rule;    // stable identifier, e.g. "include_not_allowed"
  std::string detail;  // human explanation, e.g. "<cublas_v2.h> (line 3) is not on the list"
};

// The headers a candidate may include on `backend`.
const std::vector<std::string>& allowed_includes(Backend backend);

// nullopt when the source may be compiled; otherwise the first rule that fired.
std::optional<Rejection> check_source(std::string_view source, Backend backend);

// Source with comments and string/char literals blanked out (newlines kept, so line numbers
// stay valid). Exposed for tests and the fuzz target.
std::string strip_comments_and_strings(std::string_view source);

// True when `text` is valid UTF-8 (no overlongs, no surrogates, <= U+10FFFF).
bool is_valid_utf8(std::string_view text);

}  // namespace kevin::engine
