// metrics.h — the evaluation metrics of a run (docs/report.md): correctness,
// performance and fast_p as best@k / avg@k, geometric-mean speedup, unbiased pass@k, and the
// serial (turns) and parallel (samples) scaling curves; per allocation, per task and overall.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/status.h"
#include "report/records.h"

namespace kevin::report {

// The p of fast_p: a trajectory counts when it has a correct kernel with speedup >= p.
inline constexpr std::array<double, 4> kFastThresholds = {0.0, 1.0, 1.5, 2.0};
// Where fast_1 (the headline fast_p of KernelBench and the paper) sits in kFastThresholds.
inline constexpr size_t kFast1 = 1;
static_assert(kFastThresholds[kFast1] == 1.0);
// Verdict histogram slots, indexed by VerdictKind (kCorrect is the last enumerator).
inline constexpr size_t kVerdictKinds = static_cast<size_t>(VerdictKind::kCorrect) + 1;

// A per-trajectory quantity aggregated over a task's trajectories: the maximum (best@k) and
// the mean (avg@k); overall values are the means of the per-task ones.
struct BestAvg {
  double best = 0;
  double avg = 0;
};

// Serial scaling: the metrics when each trajectory is cut to its turns < `turns`.
struct SerialPoint {
  int turns = 0;
  BestAvg correct;
  BestAvg speedup;
  BestAvg roofline;
};

// Parallel scaling: expected best@k over uniformly random k-subsets of the trajectories.
struct ParallelPoint {
  int k = 0;
  double correct = 0;
  double speedup = 0;
};

struct PassAtK {
  int k = 0;
  double value = 0;
};

struct Summary {
  BestAvg correct;  // fraction of trajectories with a correct kernel
  BestAvg speedup;  // fastest correct kernel, 0 when none
  // Highest fraction of the roofline bound a correct kernel reached, 0 when none or unmeasured.
  BestAvg roofline;
  std::array<BestAvg, kFastThresholds.size()> fast;  // fast_p for each of kFastThresholds
  std::vector<PassAtK> pass_at_k;                    // k = 1, 2, 4, ... below n, then n
  std::vector<SerialPoint> serial;                   // turns = 1 .. the allocation's turn count
  std::vector<ParallelPoint> parallel;               // k = 1 .. trajectories
};

struct Counts {
  int64_t turns = 0;                              // records (inherited beam history not repeated)
  std::array<int64_t, kVerdictKinds> verdicts{};  // indexed by VerdictKind
  double generation_ms = 0;
  double compile_ms = 0;
  double eval_ms = 0;
  int64_t cached_evals = 0;
  int64_t truncated = 0;  // responses cut at the token limit
  // The eager baseline's fraction of the roofline bound, summed over the correct turns that
  // report one, and how many did: their mean is the baseline's figure.
  double baseline_roofline_sum = 0;
  int64_t baseline_roofline_turns = 0;
  std::optional<double> baseline_roofline() const;
};

struct TaskMetrics {
  std::string task;
  int trajectories = 0;  // samples (beam: trajectories no other one fully continues)
  int correct_trajectories = 0;
  Summary summary;
  Counts counts;
};

struct GroupMetrics {
  std::string allocation;  // "16x8", "beam", ...
  int turns = 0;           // 1 + the largest turn index of the group
  int trajectories = 0;    // samples over all tasks
  Summary overall;         // mean over tasks (curves: see docs/report.md on unequal sizes)
  int solved_tasks = 0;    // tasks with a correct kernel
  std::optional<double> geomean_speedup;  // of per-task best speedups > 0 of solved tasks
  int geomean_tasks = 0;                  // how many tasks the geometric mean covers
  Counts counts;
  std::vector<TaskMetrics> tasks;  // sorted by task id
};

struct Metrics {
  std::vector<GroupMetrics> groups;  // one per allocation, in order of first appearance
};

// Unbiased pass@k (Chen et al. 2021) from n samples of which c are correct:
// 1 − C(n−c, k)/C(n, k), computed as a product. k is clamped to [1, n]; n = 0 gives 0.
double pass_at_k(int n, int c, int k);

// Expected maximum of a uniformly random k-subset of `values` (exact, no enumeration).
// k is clamped to [1, values.size()]; no values gives 0.
double expected_best_at_k(std::vector<double> values, int k);

// All metrics of `rows` (as read_trajectories returns them; a parent that is missing or part
// of a cycle is treated as absent). Pure.
Metrics compute_metrics(const std::vector<TurnRow>& rows);

// The metrics as JSON (the layout of metrics.json, described in docs/report.md).
Json to_json(const Metrics& metrics);

// Reads RUN_DIR/trajectories.jsonl and computes its metrics; errors as read_trajectories.
Result<Metrics> metrics_of_run(const std::filesystem::path& run_dir);

// Reads RUN_DIR/trajectories.jsonl and writes RUN_DIR/metrics.json atomically. Errors as
// read_trajectories, or from the write (kIoError); on error metrics.json is left as it was.
Status write_metrics_file(const std::filesystem::path& run_dir);

}  // namespace kevin::report
