// verdict.cpp — verdict names as they appear in JSON and feedback.
#include "core/verdict.h"

namespace kevin {
namespace {
constexpr VerdictKind kAll[] = {VerdictKind::kParseError,   VerdictKind::kRejected,
                                VerdictKind::kCompileError, VerdictKind::kRuntimeError,
                                VerdictKind::kTimeout,      VerdictKind::kWrongAnswer,
                                VerdictKind::kCorrect};
}  // namespace

const char* verdict_name(VerdictKind kind) {
  switch (kind) {
    case VerdictKind::kParseError:
      return "parse_error";
    case VerdictKind::kRejected:
      return "rejected";
    case VerdictKind::kCompileError:
      return "compile_error";
    case VerdictKind::kRuntimeError:
      return "runtime_error";
    case VerdictKind::kTimeout:
      return "timeout";
    case VerdictKind::kWrongAnswer:
      return "wrong_answer";
    case VerdictKind::kCorrect:
      return "correct";
  }
  return "unknown";
}

std::optional<VerdictKind> verdict_from_name(std::string_view name) {
  for (VerdictKind kind : kAll) {
    if (name == verdict_name(kind)) return kind;
  }
  return std::nullopt;
}

}  // namespace kevin
