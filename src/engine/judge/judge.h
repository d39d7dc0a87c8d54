// judge.h — the trusted judge: turns one candidate source and one ReferenceSet into a
// verdict with feedback, correctness details and timings (docs/eval.md, docs/sandbox.md).
// It refuses degenerate reference data, runs the static gate and the compile driver (which
// gates the preprocessed unit and the built object), then a fresh sandboxed runner process:
// the correctness protocol (K secret input sets, poisoned outputs, unchanged inputs,
// two-poison agreement) and, for correct candidates, the timing protocol (warm-up, then each
// call on a fresh timing set used once, cache flush, every timed output compared in full,
// each call's time bounded from both sides by the judge's own clock). Nothing the runner
// reports after the candidate is loaded is believed without such a check. Whatever the
// candidate does is a verdict; an error Status only ever means the harness itself could not
// work (runner binary missing, reference data unreadable, GPU unusable, degenerate task).
// Thread-safe: evaluate() may run concurrently.
#pragma once

#include <cstdint>
#include <chrono>
#include <filesystem>
#include <functional>
#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.h"
#include "core/mutex.h"
#include "core/verdict.h"
#include "engine/judge/compare.h"
#include "engine/judge/eval_result.h"
#include "engine/build/compiler.h"
#include "core/device_gate.h"
#include "engine/build/kernelbench.h"
#include "engine/run/reference.h"
#include "engine/run/runner_session.h"

namespace kevin::engine {

// What judging KernelBench answers needs (docs/kernelbench.md).
struct KernelBenchSupport {
  // Builds an answer's extensions into one object: a compile driver's build_extensions
  // (torch-extension profile, CompilerConfig::torch), which outlives the judge. Results and
  // errors as that.
  std::function<Result<BuildResult>(const std::vector<ExtensionUnits>&)> build;
  std::string python;                     // the interpreter with PyTorch that runs answers
  std::filesystem::path runner_script;    // kernelbench_runner.py
  std::filesystem::path support_library;  // libkevin-runner-support.so
  // libkevin-op-log.so and the PyTorch version it was built against (both empty when kevin was
  // built without libtorch): the runner's operator log of every call (docs/kernelbench.md).
  std::filesystem::path op_log_library;
  std::string op_log_torch_version;
  // The static checker on one answer (tasks::check_kernelbench_answer); errors are ours.
  std::function<Result<AnswerCheck>(std::string_view)> check;
};

struct EvalConfig {
  Backend backend = Backend::kCuda;
  int device = 0;  // CUDA device ordinal the runner is pinned to
  ToleranceProfile tolerance;
  std::filesystem::path runner_path;  // the kevin-runner executable
  bool sandbox = true;                // namespaces, empty root, uid drop, rlimits, seccomp
  bool pid_namespace = true;          // ... and a PID namespace per runner
  int warmup_calls = 3;
  int min_timed_calls = 10;
  int max_timed_calls = 100;       // also bounded by the task's timing sets
  double timing_budget_ms = 2000;  // aim for this much timed work per candidate
  // ... and for about this long in the timing phase, the judge's own work included (uploads
  // of fresh inputs, full output checks): large tasks get fewer timed calls (at least the minimum).
  double timing_phase_budget_ms = 1000;
  // Above 0: timed calls stop, once at least min_timed_calls ran, when the median's 95 %
  // interval is within ± this fraction of it (0.02: ± 2 %). 0: every affordable call runs.
  double timing_ci = 0;
  int calibration_calls = 10;  // harness-only timed calls before the candidate loads
  // Timed outputs are copied out at once, but compared with the expected ones after the
  // timing phase, when the device is no longer held alone, while the copies waiting fit in
  // this many bytes; past it they are compared at once.
  uint64_t unchecked_output_bytes = uint64_t{1} << 30;
  // The judge's clock is trusted beyond an allowance A = max(clock_slack_ms, a quarter of the
  // calibrated harness overhead per call): each timed call is charged max(event time, the
  // judge's time − overhead − A), and a median excess of the judge's time over the event
  // time beyond max(4 A, half the event time) is rejected as work outside the window.
  double clock_slack_ms = 0.02;
  // A close or noisy comparison re-times the baseline once the candidate is gone: a re-time
  // more than this fraction slower than the cached baseline is noise, timed again up to
  // `baseline_retimes` times in all, and never used (the cached baseline stands).
  double baseline_drift = 0.1;
  int baseline_retimes = 3;
  std::chrono::milliseconds init_timeout{120000};
  std::chrono::milliseconds call_timeout{20000};         // one correctness or timed call
  std::chrono::milliseconds timing_phase_limit{120000};  // all timed calls (the GPU is held)
  // A runner that fails before any candidate code runs is started twice more, after pauses
  // of 1 and 3 times this (a GPU still tearing down a killed runner's context recovers).
  std::chrono::milliseconds restart_pause{1000};
  uint64_t output_limit_bytes = 1 << 20;  // what a candidate may print before it is killed
  uint64_t cpu_seconds = 600;
  uint64_t device_memory_slack_bytes = uint64_t{512} << 20;  // GPU memory beyond the harness's
  bool allow_degenerate_tasks = false;  // evaluate even when a trivial output passes
  // Start each candidate's runner (its process, CUDA context, uploaded inputs and sandbox)
  // while the candidate builds, not after: one runner per candidate all the same, finished
  // unused when the build fails. Off: started once the build is done.
  bool start_runner_ahead = true;
  // Optional: shared during correctness runs, exclusive during timing (batch evaluation).
  DeviceGate* gate = nullptr;
  // Set: KernelBench answers can be judged (Judge::evaluate with CandidateFormat::kKernelBench).
  std::optional<KernelBenchSupport> kernelbench;
};

// What one evaluation may ask of the rest of the system.
struct EvalHooks {
  // Times the baseline now (the candidate's runner is gone), holding the device through
  // `hold`: shared while it prepares, alone for its calls (the judge's holds, which count the
  // waits and the time alone, and which the judge releases after). Used when the comparison
  // is close or noisy. Empty: the cached baseline.
  std::function<Result<TimingStats>(const TwoStepHold& hold)> retime_baseline;
};

// Builds one candidate of kevin's ABI (CompileDriver::build; results and errors as that).
using BuildFunction = std::function<Result<BuildResult>(std::string_view source)>;
// Starts the runner of one evaluation (RunnerSession::start): a runner, never null; errors
// are the harness's.
using RunnerFactory = std::function<Result<std::unique_ptr<Runner>>(const Runner::Start& how)>;

class Judge {
 public:
  // Builds with `compiler` (which outlives the judge) and runs candidates in kevin-runner.
  Judge(const CompileDriver& compiler, EvalConfig config);
  // Builds with `build` and runs candidates in what `start_runner` starts: the seam through
  // which tests put canned builds and scripted runners (fake_runner.h) in place of the
  // compiler and kevin-runner. Both must be set.
  Judge(BuildFunction build, RunnerFactory start_runner, EvalConfig config)
      : build_(std::move(build)),
        start_runner_(std::move(start_runner)),
        config_(std::move(config)) {}

  // Errors (kFailedPrecondition): the reference data is degenerate (unless allowed), the
  // sandbox cannot be applied, the GPU stays unusable, a KernelBench answer meets a judge
  // without KernelBenchSupport or a task whose init inputs are not JSON; see the class comment
  // for the rest. A KernelBench answer goes through the static checker (its first finding is
  // the `rejected` reason), is built as a PyTorch extension and runs in the Python runner under
  // the same protocol; any ATen operator but allocation, views and copies seen during a
  // correctness call is `rejected` (pytorch_compute).
  Result<EvalResult> evaluate(std::string_view source, const ReferenceSet& ref,
                              const EvalHooks& hooks = {},
                              CandidateFormat format = CandidateFormat::kKevin) const;
  const EvalConfig& config() const { return config_; }

 private:
  // Degeneracy of `ref` under this judge's tolerance, computed once per data folder.
  Result<std::vector<std::string>> degeneracy(const ReferenceSet& ref) const;
  // A KernelBench answer's checks and build: the built extension, or the decision that ends
  // it (rejected, compile_error). Fills the result's compile fields.
  struct Prepared;
  // Both call `before_build` once the candidate is known to need a build, just before it.
  Result<Prepared> prepare_kernelbench(std::string_view source, const ReferenceSet& ref,
                                       EvalResult* result,
                                       const std::function<void()>& before_build) const;
  Result<Prepared> prepare_kevin(std::string_view source, EvalResult* result,
                                 const std::function<void()>& before_build) const;

  BuildFunction build_;
  RunnerFactory start_runner_;
  EvalConfig config_;
  mutable Mutex mu_;
  // By data folder.
  mutable std::map<std::string, std::vector<std::string>> degeneracy_ GUARDED_BY(mu_);
  mutable std::atomic<bool> pid_namespace_works_{true};
};

}  // namespace kevin::engine
