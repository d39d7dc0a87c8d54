// verdict.h — what happened to one candidate. Every outcome of untrusted code is a Verdict
// (data), never an exception or a crash of ours (docs/eval.md).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace kevin {

enum class VerdictKind {
  kParseError,  // no candidate could be extracted from a model's response
  kRejected,    // a gate refused it (reason names the rule)
  kCompileError,
  kRuntimeError,  // crashed, returned non-zero, CUDA error, killed by the sandbox
  kTimeout,
  kWrongAnswer,
  kCorrect,
};

// "parse_error", "rejected", "compile_error", "runtime_error", "timeout", "wrong_answer",
// "correct".
const char* verdict_name(VerdictKind kind);
std::optional<VerdictKind> verdict_from_name(std::string_view name);

}  // namespace kevin
