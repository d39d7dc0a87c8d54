// prompt.h — the prompts a policy model receives (docs/policies.md, docs/run.md), in
// our own words: the task statement with its ABI argument list, the rules, the target
// device, a one-shot example on the first turn only, a request for a short summary after
// the code, and for each earlier turn its kernel, summary and feedback — never its chain of
// thought. A token budget drops the oldest turns first and truncates long feedback.
#pragma once

#include "core/chat.h"
#include "engine/build/kernelbench.h"

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace kevin::env {

// One earlier turn as the model will see it again.
struct TurnRecord {
  std::string code;      // the kernel it wrote ("" when nothing could be parsed)
  std::string summary;   // its own summary of the changes
  std::string feedback;  // the evaluation feedback text
};

struct PromptConfig {
  std::string backend = "cuda";  // "cuda" or "cpu"
  // kKernelBench: the model is asked, in KernelBench's style, for a Python module whose
  // `class ModelNew` calls code built with load_inline (docs/kernelbench.md), in a ```python block.
  engine::CandidateFormat format = engine::CandidateFormat::kKevin;
  std::string device_name = "NVIDIA H200";
  size_t context_tokens = 24000;     // budget for the whole prompt
  size_t max_feedback_chars = 4000;  // per earlier turn; longer logs keep head and tail
};

// A documented estimate for when no tokenizer is at hand: one token per 3 bytes, rounded up
// (byte-level BPE vocabularies average 3–4 bytes per token on code; 3 errs on the safe side).
size_t estimate_tokens(std::string_view text);

struct Prompt {
  std::vector<ChatMessage> messages;
  size_t estimated_tokens = 0;
  size_t turns_included = 0;
  size_t turns_dropped = 0;  // oldest turns left out to fit the budget
};

// `problem` is the task statement (tasks::problem_statement). `history` is in turn order.
Prompt build_prompt(const std::string& problem, const std::vector<TurnRecord>& history,
                    const PromptConfig& config);

// Keeps the first and last parts of `text` within `max_chars`, marking what was cut.
std::string truncate_middle(std::string_view text, size_t max_chars);

}  // namespace kevin::env
