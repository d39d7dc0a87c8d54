// judge.h — the trusted judge: turns one candidate source and one ReferenceSet into a
// verdict with feedback, correctness details and timings (DESIGN.md §5–6). It runs the
// static gate, the compile driver, the symbol gate, then a fresh sandboxed runner process
// for the correctness protocol (K secret input sets, poisoned outputs, unchanged inputs,
// two-poison agreement) and, for correct candidates, the timing protocol (warm-up, rotating
// input sets, cache flush, every timed output fingerprinted, device-wide and parent-side
// clock checks). Whatever the candidate does is a verdict; an error Status only ever means
// the harness itself could not work (runner binary missing, reference data unreadable).
// Thread-safe: evaluate() may run concurrently.
#pragma once

#include <cstdint>
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.h"
#include "core/verdict.h"
#include "engine/compare.h"
#include "engine/compiler.h"
#include "engine/device_gate.h"
#include "engine/reference.h"

namespace kevin::engine {

struct EvalConfig {
  Backend backend = Backend::kCuda;
  int device = 0;                           // CUDA device ordinal the runner is pinned to
  ToleranceProfile tolerance;
  std::filesystem::path runner_path;        // the kevin-runner executable
  bool sandbox = true;                      // seccomp, rlimits, namespaces, uid drop
  int warmup_calls = 3;
  int min_timed_calls = 10;
  int max_timed_calls = 100;
  double timing_budget_ms = 2000;           // aim for this much timed work per candidate
  std::chrono::milliseconds init_timeout{120000};
  std::chrono::milliseconds call_timeout{20000};  // one correctness call
  uint64_t output_limit_bytes = 1 << 20;    // what a candidate may print before it is killed
  uint64_t cpu_seconds = 600;
  // Optional: shared during correctness runs, exclusive during timing (batch evaluation).
  DeviceGate* gate = nullptr;
};

struct EvalResult {
  VerdictKind verdict = VerdictKind::kRuntimeError;
  std::string reason;     // rule name for `rejected`, a short cause otherwise
  std::string feedback;   // the text a model receives
  double compile_ms = 0;
  bool cache_hit = false;
  std::optional<double> candidate_ms, baseline_ms, speedup;
  std::optional<double> max_abs_error, max_rel_error;
  std::optional<TimingStats> timing;   // candidate, when correct
  std::optional<TimingStats> baseline;
  std::string mismatch;                // details of a wrong answer
  std::string runner_output;           // what the candidate printed (capped)
  std::vector<std::string> sandbox_enforced, sandbox_skipped;
  std::string device_name;
  int device_ordinal = -1;  // the CUDA device it ran on (-1 on the CPU)
  double total_ms = 0;
  // Where total_ms went: gate+compile+symbol gate, runner start and upload, correctness
  // calls with the judge's comparisons, timed calls. Unreached phases stay 0.
  struct Phases {
    double prepare_ms = 0, load_ms = 0, check_ms = 0, time_ms = 0;
  } phases;

  bool correct() const { return verdict == VerdictKind::kCorrect; }
};

// The JSON form documented in docs/eval.md (verdict, correct, reason, feedback, timings...).
Json to_json(const EvalResult& r);

class Judge {
 public:
  Judge(const CompileDriver& compiler, EvalConfig config)
      : compiler_(compiler), config_(std::move(config)) {}

  Result<EvalResult> evaluate(std::string_view source, const ReferenceSet& ref) const;
  const EvalConfig& config() const { return config_; }

 private:
  const CompileDriver& compiler_;
  EvalConfig config_;
};

}  // namespace kevin::engine
