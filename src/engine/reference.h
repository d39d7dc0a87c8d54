// reference.h — what the judge needs from the trusted reference side, as plain data: the
// ABI argument list, K input sets and their expected outputs (in files the reference worker
// wrote), per-set scalars, and the eager baseline time. The engine never runs Python; the
// tasks module produces ReferenceSets.
//
// File layout (protocol 1), shared with the reference worker: `inputs.bin` holds the K input
// sets back to back, each `set_bytes` long; inside a set, tensors follow the ABI order, each
// starting at a 256-byte-aligned offset, padding zero-filled. `expected.bin` holds the K
// output sets the same way.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/tensor.h"

namespace kevin::engine {

inline constexpr int kReferenceProtocol = 1;
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
  int calls = 0;
};
// Statistics of a list of per-call times (empty list → all zero).
TimingStats timing_stats(std::vector<double> ms);
Json to_json(const TimingStats& t);
Result<TimingStats> timing_stats_from_json(const Json& j);

struct ReferenceSet {
  std::string task_name;
  std::string backend;          // "cuda" or "cpu"
  std::string device_name;      // e.g. "NVIDIA H200" or "cpu"
  std::string torch_version;
  std::vector<ArgSpec> inputs;  // ABI order: forward tensors, then state_dict entries
  std::vector<std::string> scalar_names;
  std::vector<TensorSpec> outputs;
  size_t num_sets = 0;
  std::vector<std::vector<double>> scalars;  // [set][scalar]
  std::filesystem::path dir;                 // holds inputs.bin, expected.bin
  std::optional<TimingStats> baseline;       // eager PyTorch, same protocol as candidates

  std::vector<TensorSpec> input_tensors() const;
  std::filesystem::path inputs_file() const { return dir / "inputs.bin"; }
  std::filesystem::path expected_file() const { return dir / "expected.bin"; }
};

// Reads `dir`/meta.json and checks that the data files have the sizes the layout implies.
Result<ReferenceSet> load_reference(const std::filesystem::path& dir);
Json reference_meta_json(const ReferenceSet& ref);

}  // namespace kevin::engine
