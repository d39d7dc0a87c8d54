// eval_result.h — what one evaluation decided (verdict, feedback, times, the speed-of-light
// figures, where the time went) and its JSON form: the light seam between the judge and
// everything that only reads its results (the environment, the queue, reports), which need
// none of the judge's machinery.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/json.h"
#include "core/status.h"
#include "core/verdict.h"
#include "engine/run/reference.h"
#include "engine/run/roofline.h"

namespace kevin::engine {

struct EvalResult {
  VerdictKind verdict = VerdictKind::kRuntimeError;
  std::string reason;    // rule name for `rejected`, a short cause otherwise
  std::string feedback;  // the text a model receives
  double compile_ms = 0;
  bool cache_hit = false;
  std::optional<double> candidate_ms, baseline_ms, speedup;
  // The speedup's 95 % interval (low, high), from the two medians' intervals: set with speedup.
  std::optional<std::pair<double, double>> speedup_ci;
  std::optional<double> max_abs_error, max_rel_error;
  std::optional<TimingStats> timing;  // candidate, when correct (judge-checked per call)
  std::optional<TimingStats> baseline;
  // Correct kernels, where the reference data carries the task's work and the device's peaks:
  // the roofline bound and what the kernel and the baseline achieve against it.
  std::optional<SpeedOfLight> speed_of_light;
  std::string baseline_source;  // "cached" or "retimed" (once the candidate's runner was gone)
  // What baseline_ms and speedup are measured against (ReferenceSet::baseline_kind). With a
  // compile baseline, eager PyTorch's time and the speedup against it are reported beside.
  BaselineKind baseline_kind = BaselineKind::kEager;
  std::optional<double> eager_baseline_ms, speedup_vs_eager;
  // Set where every re-time came out slower than baseline_drift allows (how many were made):
  // the cached baseline was kept.
  std::optional<int> baseline_retimes_refused;
  // The judge's clock against the runner's: harness overhead per timed call (measured before
  // the candidate loaded) and the median time per call the judge saw beyond overhead + event.
  std::optional<double> harness_overhead_ms, unaccounted_ms;
  // Set where the calls looked longer than their windows: the overhead measured again after
  // them, in a fresh runner (harness_overhead_ms is then the larger of the two).
  std::optional<double> recalibrated_overhead_ms;
  std::string mismatch;       // details of a wrong answer
  std::string runner_output;  // what the candidate printed (capped)
  std::vector<std::string> sandbox_enforced, sandbox_skipped;
  std::string device_name;
  int device_ordinal = -1;  // the CUDA device it ran on (-1 on the CPU)
  double total_ms = 0;
  // Where total_ms went: gate+compile+symbol gate (prepare); runner start, setup and input
  // upload (start: it overlaps prepare when the runner is started ahead, so the phases may add
  // up to more than total_ms); calibration and loading (load); correctness calls with the
  // judge's comparisons (check); timed calls (time). Unreached phases stay 0.
  struct Phases {
    double prepare_ms = 0, start_ms = 0, load_ms = 0, check_ms = 0, time_ms = 0;
    // Of start, load, check and time: waiting for the device gate (shared behind another
    // evaluation's timing, or alone behind everyone else's use of the device).
    double gate_wait_ms = 0;
    // The time this evaluation held the device alone (calibration, timed calls, baseline
    // re-times, a retry with the device to itself): what it cost every other evaluation.
    double alone_ms = 0;
  } phases;

  bool correct() const { return verdict == VerdictKind::kCorrect; }
};

// The JSON form documented in docs/eval.md (verdict, correct, reason, feedback, timings...).
Json to_json(const EvalResult& r);
// The inverse of to_json (a result sent by a remote worker). kInvalidArgument naming the field
// for a missing or mistyped one, or an unknown verdict.
Result<EvalResult> eval_result_from_json(const Json& j);

}  // namespace kevin::engine
