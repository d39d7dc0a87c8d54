// judge_test_support.h — reference data written by hand for engine tests that run the real
// CPU runner without Python: an element-wise sum of two float vectors, K correctness sets
// and T timing sets, expected outputs computed here, an optional eager baseline.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <random>
#include <vector>

#include "core/file.h"
#include "engine/run/reference.h"

namespace kevin::engine {

// out = f(a, b) elementwise over `n` floats; `f` makes degenerate data when asked.
inline Result<ReferenceSet> write_sum_reference(
    const std::filesystem::path& dir, int64_t n, size_t sets, size_t timing_sets,
    std::optional<TimingStats> baseline,
    const std::function<float(float, float)>& f = [](float a, float b) { return a + b; }) {
  ReferenceSet ref;
  ref.task_name = "sum";
  ref.backend = "cpu";
  ref.device_name = "cpu";
  ref.torch_version = "none";
  ref.inputs = {{TensorSpec{"a", DType::kF32, {n}}, ArgRole::kInput},
                {TensorSpec{"b", DType::kF32, {n}}, ArgRole::kInput}};
  ref.outputs = {TensorSpec{"output", DType::kF32, {n}}};
  ref.num_sets = sets;
  ref.scalars.assign(sets, {});
  ref.num_timing_sets = timing_sets;
  ref.timing_scalars.assign(timing_sets, {});
  ref.baseline = baseline;
  ref.dir = dir;
  const SetLayout in = layout_of(ref.input_tensors()), out = layout_of(ref.outputs);
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  const auto write_sets = [&](size_t count, const std::filesystem::path& inputs,
                              const std::filesystem::path& expected) {
    std::string in_bytes(count * in.set_bytes, '\0'), out_bytes(count * out.set_bytes, '\0');
    for (size_t k = 0; k < count; ++k) {
      auto* a = reinterpret_cast<float*>(in_bytes.data() + k * in.set_bytes + in.offsets[0]);
      auto* b = reinterpret_cast<float*>(in_bytes.data() + k * in.set_bytes + in.offsets[1]);
      auto* o = reinterpret_cast<float*>(out_bytes.data() + k * out.set_bytes);
      for (int64_t i = 0; i < n; ++i) {
        a[i] = normal(rng);
        b[i] = normal(rng);
        o[i] = f(a[i], b[i]);
      }
    }
    KEVIN_RETURN_IF_ERROR(write_file_atomic(inputs, in_bytes));
    return write_file_atomic(expected, out_bytes);
  };
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  KEVIN_RETURN_IF_ERROR(write_sets(sets, ref.inputs_file(), ref.expected_file()));
  KEVIN_RETURN_IF_ERROR(
      write_sets(timing_sets, ref.timing_inputs_file(), ref.timing_expected_file()));
  KEVIN_RETURN_IF_ERROR(write_file_atomic(dir / "meta.json", dump_json(reference_meta_json(ref))));
  return load_reference(dir);
}

}  // namespace kevin::engine
