// reference.h — what the judge needs from the trusted reference side, as plain data: the
// ABI argument list, K input sets and their expected outputs (in files the reference worker
// wrote), per-set scalars, and the eager baseline time. The engine never runs Python; the
// tasks module produces ReferenceSets.
//
// File layout (protocol 2), shared with the reference worker: `inputs.bin` holds the K
// correctness input sets back to back, each `set_bytes` long; inside a set, tensors follow
// the ABI order, each starting at a 256-byte-aligned offset, padding zero-filled.
// `expected.bin` holds the K output sets the same way. `timing_inputs.bin` and
// `timing_expected.bin` hold T further sets, from seeds of their own, in the same layout:
// the timing protocol times each of them once, so no timed call ever runs on inputs the
// candidate has already seen answered (docs/sandbox.md). The runner is only ever given
// `inputs.bin`; the judge hands it one timing set at a time.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/json.h"
#include "core/tensor.h"
#include "engine/run/roofline.h"

namespace kevin::engine {

inline constexpr int kReferenceProtocol = 3;
inline constexpr uint64_t kTensorAlignment = 256;

enum class ArgRole { kInput, kParameter, kBuffer };
const char* arg_role_name(ArgRole role);  // "input" / "parameter" / "buffer"

struct ArgSpec {
  TensorSpec tensor;
  ArgRole role = ArgRole::kInput;
};

// Where each tensor of a set lies, and the set's padded size.
struct SetLayout {
  std::vector<uint64_t> offsets;
  uint64_t set_bytes = 0;
};
SetLayout layout_of(const std::vector<TensorSpec>& tensors);

struct TimingStats {
  double median_ms = 0, min_ms = 0, p90_ms = 0, mean_ms = 0, stdev_ms = 0;
  // A 95 % confidence interval of the median, from order statistics (no assumption on the
  // times' distribution): the times at ranks median_ci_ranks(calls). Both 0 when unknown (a
  // baseline cached before the interval was recorded).
  double median_lo_ms = 0, median_hi_ms = 0;
  int calls = 0;
  int64_t measured_at = 0;  // Unix seconds when measured (baselines; 0 = unknown)
  bool has_interval() const { return median_hi_ms > 0; }
  // The interval's half-width relative to the median (0 for an empty sample, 1e9 unknown).
  double relative_half_width() const;
};
// The 1-based ranks, in n sorted times, of the bounds of a 95 % interval of the median:
// floor(n/2 − 0.98 √n) and ceil(1 + n/2 + 0.98 √n), clamped to [1, n]. The reference worker
// (reference_worker.py, median_ci_ranks) computes the same for the baselines.
std::pair<size_t, size_t> median_ci_ranks(size_t n);
// Statistics of a list of per-call times (empty list → all zero).
TimingStats timing_stats(std::vector<double> ms);
Json to_json(const TimingStats& t);
Result<TimingStats> timing_stats_from_json(const Json& j);

// What a candidate's speedup is measured against: PyTorch's eager reference, or the same
// model under torch.compile (default mode), each timed with the candidates' protocol.
enum class BaselineKind { kEager, kCompile };
const char* baseline_kind_name(BaselineKind kind);  // "eager", "compile"
std::optional<BaselineKind> baseline_kind_from_name(std::string_view name);

struct ReferenceSet {
  std::string task_name;
  std::string backend;      // "cuda" or "cpu"
  std::string device_name;  // e.g. "NVIDIA H200" or "cpu"
  std::string torch_version;
  std::vector<ArgSpec> inputs;  // ABI order: forward tensors, then state_dict entries
  std::vector<std::string> scalar_names;
  std::vector<std::string> scalar_kinds;  // "bool" / "int" / "float" per scalar (as forward got it)
  std::vector<std::string> forward_args;  // "tensor" / "scalar" for each forward argument, in order
  // get_init_inputs() as a JSON list (KernelBench answers' ModelNew is built with it); null
  // when the task's init inputs are not JSON (tensors), which such answers cannot be run on.
  Json init_inputs;
  std::vector<TensorSpec> outputs;
  size_t num_sets = 0;                              // K correctness sets
  std::vector<std::vector<double>> scalars;         // [set][scalar]
  size_t num_timing_sets = 0;                       // T timing sets (each timed once)
  std::vector<std::vector<double>> timing_scalars;  // [timing set][scalar]
  std::filesystem::path dir;                        // holds the four data files and meta.json
  // The baseline speedups are measured against (set by the provider, not stored in
  // meta.json), timed with the candidates' protocol: of kind `baseline_kind`.
  std::optional<TimingStats> baseline;
  BaselineKind baseline_kind = BaselineKind::kEager;
  // Eager PyTorch's, reported beside `baseline` when that is another kind (compile).
  std::optional<TimingStats> eager_baseline;
  // The work one forward must do (meta.json "work"); none where the worker could not count it
  // or the data predates the count.
  std::optional<TaskWork> work;
  // Whether the task shrinks itself on the CPU backend (KEVIN_CPU_SIZES; meta.json
  // "has_cpu_sizes"); unknown for data that predates the field.
  std::optional<bool> has_cpu_sizes;
  // The device's peak rates (set by the provider, not stored in meta.json): with `work`, what
  // the judge needs for speed of light. None: not measured (or the measurement failed).
  std::optional<DevicePeaks> peaks;
  // The task file the set was made from (absolute; set by the provider, not stored in
  // meta.json): what a re-timing of the baseline needs. Empty for sets loaded directly.
  std::filesystem::path task_file;
  // Keeps `dir` from being deleted while any copy of this set lives (the provider's seed-set
  // directories are removed only when no lease holds them); null for sets loaded directly.
  // Copies share it, so hand copies, not paths, to whatever reads the files.
  std::shared_ptr<const void> lease;

  std::vector<TensorSpec> input_tensors() const;
  std::filesystem::path inputs_file() const { return dir / "inputs.bin"; }
  std::filesystem::path expected_file() const { return dir / "expected.bin"; }
  std::filesystem::path timing_inputs_file() const { return dir / "timing_inputs.bin"; }
  std::filesystem::path timing_expected_file() const { return dir / "timing_expected.bin"; }
};

// Reads `dir`/meta.json and checks that the four data files have the sizes the layout implies.
// Errors: kFailedPrecondition for another protocol's data (protocol-1 directories included),
// kNotFound for a missing file, kInvalidArgument for inconsistent metadata or sizes.
Result<ReferenceSet> load_reference(const std::filesystem::path& dir);
Json reference_meta_json(const ReferenceSet& ref);

}  // namespace kevin::engine
