// judge_feedback.cpp — the wording of the judge's decisions (judge_feedback.h): what the
// model reads when its kernel is rejected, fails to build, fails at run time or loses its
// runner.
#include "engine/judge/judge_feedback.h"

#include <csignal>
#include <iomanip>
#include <iterator>
#include <sstream>

namespace kevin::engine::judge_feedback {

// v with `digits` significant digits ("0.0123").
std::string fmt_g(double v, int digits) {
  std::ostringstream o;
  o << std::setprecision(digits) << v;
  return o.str();
}

// v with `decimals` digits after the point ("1.50").
std::string fmt_f(double v, int decimals) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(decimals) << v;
  return o.str();
}

namespace {

// 3 significant digits without an exponent: "0.0123", "41.5", "2504".
std::string readable(double v) { return v >= 100 ? fmt_f(v, 0) : fmt_g(v, 3); }

// v in `unit` with a decimal prefix and 3 significant digits ("33.6 MB", "1.1 TFLOP").
std::string with_prefix(double v, const char* unit) {
  static constexpr const char* kPrefixes[] = {"", "k", "M", "G", "T", "P"};
  size_t i = 0;
  while (v >= 1000 && i + 1 < std::size(kPrefixes)) {
    v /= 1000;
    ++i;
  }
  return readable(v) + " " + kPrefixes[i] + unit;
}

std::string percent(double fraction) {
  return (fraction >= 0.01 ? fmt_f(100 * fraction, 0) : fmt_g(100 * fraction, 2)) + "%";
}

}  // namespace

std::string speed_of_light_sentence(const SpeedOfLight& s) {
  std::string text =
      "Speed of light on this device: the task must move at least " +
      with_prefix(s.work.min_bytes, "B") + " and do " + with_prefix(s.work.flops, "FLOP") +
      ", so no kernel can take less than " + fmt_g(s.bound_ms, 3) + " ms (" + s.limit +
      "-bound at " +
      (s.limit == "memory" ? readable(s.peak_gbps) + " GB/s"
                           : readable(s.work.flops / s.compute_ms / 1e9) + " TFLOP/s") +
      ")";
  if (s.candidate) {
    text += "; yours reaches " + percent(s.candidate->fraction) + " of that bound (" +
            readable(s.candidate->gbps) + " GB/s, " + readable(s.candidate->tflops) + " TFLOP/s";
    // The peaks are what PyTorch's copy and float32 cuBLAS reach: lower-precision tensor cores
    // (TF32, bf16) go past them, within a loose tolerance.
    if (s.candidate->fraction > 1) text += ", past the float32 peaks measured here";
    text += ")";
  }
  if (s.baseline) {
    text += ", the PyTorch reference " + percent(s.baseline->fraction);
    // Moving several times the minimum is what fusing operators saves.
    if (s.work.min_bytes > 0 && s.work.eager_bytes >= 1.5 * s.work.min_bytes) {
      text += " (its " + std::to_string(s.work.eager_ops) + " operators move " +
              fmt_g(s.work.eager_bytes / s.work.min_bytes, 2) + "x the minimum)";
    }
  }
  return text + ".";
}

Decision rejected(const Rejection& r) {
  return {VerdictKind::kRejected, r.rule,
          "Your kernel was rejected before it ran (rule " + r.rule + "): " + r.detail + "."};
}

// A rejection by the timing protocol's own checks, once the kernel has run correctly.
Decision rejected_when_timed(const Rejection& r) {
  return {VerdictKind::kRejected, r.rule,
          "Your kernel computed correct outputs but was rejected while being timed (rule " +
              r.rule + "): " + r.detail + "."};
}

// A rejection by what the runner saw the answer do (a KernelBench answer's PyTorch operators).
Decision rejected_when_run(const Rejection& r) {
  return {VerdictKind::kRejected, r.rule,
          "Your answer was rejected while it ran (rule " + r.rule + "): " + r.detail + "."};
}

namespace {

std::string printed_suffix(const std::string& printed) {
  if (printed.empty()) return "";
  return "\nOutput printed by the kernel before it stopped:\n" + printed;
}

}  // namespace

Decision runtime_error(const std::string& what, const std::string& printed) {
  return {VerdictKind::kRuntimeError, what,
          "Your kernel compiled but failed at run time: " + what + "." + printed_suffix(printed)};
}

Decision wrong_answer(std::string reason, std::string feedback) {
  return {VerdictKind::kWrongAnswer, std::move(reason), std::move(feedback)};
}

// A reply that never came, or came out of protocol: the candidate's doing once it is loaded.
Decision from_lost_runner(const Runner::Reply& r, const std::string& printed,
                          std::chrono::milliseconds limit, const char* stage) {
  if (r.timed_out) {
    return {VerdictKind::kTimeout, std::string(stage) + " did not finish",
            "Your kernel did not finish within " +
                fmt_f(static_cast<double>(limit.count()) / 1000.0, 1) + " s during " + stage +
                " and was stopped (infinite loop or deadlock?)."};
  }
  if (r.malformed) {
    return runtime_error("the process running it sent " + r.malformed_why + " during " + stage +
                             " (the kernel overwrote the harness's memory?)",
                         printed);
  }
  std::string how = r.exit.describe();
  if (!r.exit.exited && r.exit.signal == SIGXFSZ)
    how = "it printed more output than allowed (1 MiB)";
  if (!r.exit.exited && r.exit.signal == SIGXCPU) how = "it exceeded its CPU-time limit";
  if (!r.exit.exited && r.exit.signal == SIGSYS) how = "it made a forbidden system call";
  return runtime_error(
      "the process running it ended unexpectedly during " + std::string(stage) + " (" + how + ")",
      printed);
}

// The build's outcome as the result's compile fields, and as the decision that ends the
// candidate when the build was refused or failed.
std::optional<Decision> build_outcome(const BuildResult& build, EvalResult* result) {
  result->compile_ms = build.compile_ms;
  result->cache_hit = build.cache_hit;
  if (build.rejection) return rejected(*build.rejection);
  if (!build.ok) {
    return Decision{VerdictKind::kCompileError, "compilation failed",
                    "Your kernel failed to compile. Compiler output:\n" + build.log};
  }
  return std::nullopt;
}

// The checker's findings as the verdict: the first one's rule, all of them in the feedback.
Decision refused_answer(const std::vector<AnswerFinding>& findings) {
  std::string detail =
      findings.front().detail +
      (findings.front().line > 0 ? " (line " + std::to_string(findings.front().line) + ")" : "");
  for (size_t i = 1; i < findings.size() && i < 8; ++i) {
    detail += "; also " + findings[i].rule + ": " + findings[i].detail;
  }
  return rejected({findings.front().rule, detail});
}

}  // namespace kevin::engine::judge_feedback
