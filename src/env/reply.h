// reply.h — reading a model's reply into the action of a turn, by one set of rules for every
// driver of an episode (rollout, the server's front ends): the reasoning (an inline
// <think>…</think> block, if any), the last fenced code block in a C++/CUDA language (```cuda,
// ```cu, ```cpp, ```c++, ```c, ```cc, ```cxx or untagged) — for KernelBench answers the last
// ```python (```py or untagged) block — and the text after it as the model's summary of its
// changes. Untrusted input: never throws, any byte string.
#pragma once

#include "engine/build/kernelbench.h"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace kevin::env {

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

// What the model submitted in one turn.
struct Action {
  bool parsed = false;      // false: the response held no usable kernel
  std::string code;         // the candidate source (when parsed)
  std::string summary;      // the model's summary of its changes
  std::string parse_error;  // why nothing could be used (when !parsed)
  std::string reasoning;    // an inline <think> block's contents, if any (never shown again)
};

// What becomes of a reply with no fence at all.
enum class Unfenced {
  kParseError,    // a model's own reply: the prompt asked for a fenced block
  kEntryDefined,  // the source, when it defines the entry point (kevin_forward, or class
                  // ModelNew for a KernelBench answer): clients that strip the fences of a
                  // one-block reply (OpenEnv steps)
  kAlwaysSource,  // the source as it is: a request field that holds code (KernelGYM)
};

// How a driver of episodes reads replies.
struct ReplyRules {
  // The format the prompt asked for (which fenced block is the answer).
  engine::CandidateFormat format = engine::CandidateFormat::kKevin;
  // Where either format may come (a server judging KernelBench answers too): a reply holding a
  // ```python block or a ModelNew class is read as a KernelBench answer, any other as kevin's.
  bool either_format = false;
  Unfenced unfenced = Unfenced::kParseError;
  size_t max_summary = kDefaultMaxSummary;
  // The generation stopped at this many tokens (finish_reason "length"): a reply without a
  // usable block is then said to have been cut off.
  std::optional<int> cut_off_at_tokens;
};

// The action `reply` holds under `rules`; a reply without a usable kernel is an Action with
// parsed false and the parse error the model will read.
Action read_reply(std::string_view reply, const ReplyRules& rules);

}  // namespace kevin::env
