// roofline.h — speed of light: the work a task must do (counted by the reference worker), the
// peak rates of the device (measured by kevin once per device model), and, for a measured
// time, the achieved bandwidth and FLOP rate and the fraction of the roofline bound reached
// (docs/eval.md, "Speed of light"). Plain data and arithmetic; nothing here measures.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "core/json.h"

namespace kevin::engine {

// One forward of the task, as the reference worker counts it: FLOPs (2 per multiply-add in
// matrix products, convolutions and attention, 1 per element of any other computing operator),
// the products' FLOPs by operand dtype, the bytes any implementation must move (inputs,
// parameters and buffers read once, outputs written once), and what eager PyTorch's operators
// read and write one by one.
struct TaskWork {
  double flops = 0;
  std::map<std::string, double> matmul_flops;  // "float32", "bfloat16", ... → FLOPs
  double min_bytes = 0;
  double eager_bytes = 0;
  int eager_ops = 0;
};
Json to_json(const TaskWork& w);
// kInvalidArgument naming the field for a missing, mistyped or negative one.
Result<TaskWork> task_work_from_json(const Json& j);

// A device's peak rates, each the best of repeated calls: memory bandwidth of a
// device-to-device copy (bytes read plus written) and matrix-product rates by dtype
// ("float32" without TF32, "tf32", "bfloat16", "float16"; the CPU backend: "float32", one
// thread).
struct DevicePeaks {
  std::string device_name;
  std::string torch_version;
  double bandwidth_gbps = 0;
  std::map<std::string, double> tflops;
  int64_t measured_at = 0;  // Unix seconds
  // The rate products in `dtype` are bounded by: its own, else float32's.
  double tflops_for(const std::string& dtype) const;
};
Json to_json(const DevicePeaks& p);
// kInvalidArgument naming the field; bandwidth and a float32 rate must be positive.
Result<DevicePeaks> device_peaks_from_json(const Json& j);

// What a time achieves against the bound.
struct Achieved {
  double ms = 0;
  double gbps = 0;      // min_bytes / time
  double tflops = 0;    // flops / time
  double fraction = 0;  // bound_ms / time: 1 is the speed of light
};

struct SpeedOfLight {
  TaskWork work;
  double peak_gbps = 0;
  double memory_ms = 0;   // min_bytes at peak bandwidth
  double compute_ms = 0;  // products at their dtype's rate, other FLOPs at float32's
  double bound_ms = 0;    // max(memory_ms, compute_ms)
  std::string limit;      // "memory" or "compute": which term is the bound
  std::optional<Achieved> candidate, baseline;
};
// The bound of `work` on `peaks`, and what each given time (ms > 0) achieves against it. None
// when the work is empty (no bytes, no FLOPs) or the peaks unusable.
std::optional<SpeedOfLight> speed_of_light(const TaskWork& work, const DevicePeaks& peaks,
                                           std::optional<double> candidate_ms,
                                           std::optional<double> baseline_ms);
Json to_json(const SpeedOfLight& s);
// The inverse of to_json; kInvalidArgument naming the field.
Result<SpeedOfLight> speed_of_light_from_json(const Json& j);

}  // namespace kevin::engine
