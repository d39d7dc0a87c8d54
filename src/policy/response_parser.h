// response_parser.h — extracts the candidate kernel from a model's response: the reasoning
// (an inline <think>…</think> block, if any), the last fenced code block in a C++/CUDA
// language (```cuda, ```cu, ```cpp, ```c++, ```c, ```cc, ```cxx or untagged) — for KernelBench
// answers the last ```python (```py or untagged) block — and the text after it as the model's
// summary of its changes. Untrusted input: never throws, any byte string.
#pragma once

#include "engine/kernelbench.h"

#include <cstddef>
#include <string>
#include <string_view>

namespace kevin::policy {

struct ParsedResponse {
  bool ok = false;
  std::string code;       // the candidate source (when ok)
  std::string summary;    // text after the code block, trimmed, at most max_summary bytes
  std::string reasoning;  // the inline <think> block's contents, if any
  std::string error;      // why no candidate could be extracted (when !ok): parse_error feedback
};

inline constexpr size_t kDefaultMaxSummary = 2000;

ParsedResponse parse_response(std::string_view response, size_t max_summary = kDefaultMaxSummary,
                              engine::CandidateFormat format = engine::CandidateFormat::kKevin);

}  // namespace kevin::policy
