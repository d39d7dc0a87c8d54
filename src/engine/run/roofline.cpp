// roofline.cpp — the roofline bound of a task on a device, achieved rates, and their JSON.
#include "engine/run/roofline.h"

#include <algorithm>
#include <cmath>

namespace kevin::engine {
namespace {

// A finite number >= 0 at `key` (missing → `fallback`).
Result<double> amount(const Json& j, const char* key, double fallback) {
  KEVIN_ASSIGN_OR_RETURN(const double v, json_get_or<double>(j, key, fallback));
  if (!std::isfinite(v) || v < 0)
    return invalid_argument("field \"" + std::string(key) + "\": expected a number >= 0");
  return v;
}

Result<std::map<std::string, double>> rates(const Json& j, const char* key) {
  std::map<std::string, double> out;
  if (!j.contains(key) || j[key].is_null()) return out;
  if (!j[key].is_object())
    return invalid_argument("field \"" + std::string(key) + "\": expected an object");
  for (const auto& [name, value] : j[key].items()) {
    KEVIN_ASSIGN_OR_RETURN(out[name], amount(j[key], name.c_str(), 0));
  }
  return out;
}

Achieved achieved(const TaskWork& work, double bound_ms, double ms) {
  // bytes / ms / 1e6 = GB/s; FLOPs / ms / 1e9 = TFLOP/s.
  return {ms, work.min_bytes / ms / 1e6, work.flops / ms / 1e9, bound_ms / ms};
}

Json to_json(const Achieved& a) {
  return {{"ms", a.ms}, {"gbps", a.gbps}, {"tflops", a.tflops}, {"fraction", a.fraction}};
}

Result<std::optional<Achieved>> achieved_from_json(const Json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return std::optional<Achieved>();
  const Json& a = j[key];
  Achieved out;
  KEVIN_ASSIGN_OR_RETURN(out.ms, amount(a, "ms", 0));
  KEVIN_ASSIGN_OR_RETURN(out.gbps, amount(a, "gbps", 0));
  KEVIN_ASSIGN_OR_RETURN(out.tflops, amount(a, "tflops", 0));
  KEVIN_ASSIGN_OR_RETURN(out.fraction, amount(a, "fraction", 0));
  return std::optional<Achieved>(out);
}

}  // namespace

Json to_json(const TaskWork& w) {
  return {{"flops", w.flops},
          {"matmul_flops", w.matmul_flops},
          {"min_bytes", w.min_bytes},
          {"eager_bytes", w.eager_bytes},
          {"eager_ops", w.eager_ops}};
}

Result<TaskWork> task_work_from_json(const Json& j) {
  if (!j.is_object()) return invalid_argument("work: expected an object");
  TaskWork w;
  KEVIN_ASSIGN_OR_RETURN(w.flops, amount(j, "flops", 0));
  KEVIN_ASSIGN_OR_RETURN(w.matmul_flops, rates(j, "matmul_flops"));
  KEVIN_ASSIGN_OR_RETURN(w.min_bytes, amount(j, "min_bytes", 0));
  KEVIN_ASSIGN_OR_RETURN(w.eager_bytes, amount(j, "eager_bytes", 0));
  KEVIN_ASSIGN_OR_RETURN(w.eager_ops, json_get_or<int>(j, "eager_ops", 0));
  return w;
}

double DevicePeaks::tflops_for(const std::string& dtype) const {
  const auto own = tflops.find(dtype);
  if (own != tflops.end() && own->second > 0) return own->second;
  const auto f32 = tflops.find("float32");
  return f32 == tflops.end() ? 0 : f32->second;
}

Json to_json(const DevicePeaks& p) {
  return {{"device_name", p.device_name},
          {"torch_version", p.torch_version},
          {"bandwidth_gbps", p.bandwidth_gbps},
          {"tflops", p.tflops},
          {"measured_at", p.measured_at}};
}

Result<DevicePeaks> device_peaks_from_json(const Json& j) {
  if (!j.is_object()) return invalid_argument("peaks: expected an object");
  DevicePeaks p;
  KEVIN_ASSIGN_OR_RETURN(p.device_name, json_get<std::string>(j, "device_name"));
  KEVIN_ASSIGN_OR_RETURN(p.torch_version, json_get_or<std::string>(j, "torch_version", ""));
  KEVIN_ASSIGN_OR_RETURN(p.bandwidth_gbps, amount(j, "bandwidth_gbps", 0));
  KEVIN_ASSIGN_OR_RETURN(p.tflops, rates(j, "tflops"));
  KEVIN_ASSIGN_OR_RETURN(p.measured_at, json_get_or<int64_t>(j, "measured_at", 0));
  if (p.bandwidth_gbps <= 0) return invalid_argument("peaks: bandwidth_gbps must be > 0");
  if (p.tflops_for("float32") <= 0) return invalid_argument("peaks: no float32 rate");
  return p;
}

std::optional<SpeedOfLight> speed_of_light(const TaskWork& work, const DevicePeaks& peaks,
                                           std::optional<double> candidate_ms,
                                           std::optional<double> baseline_ms) {
  const double f32 = peaks.tflops_for("float32");
  if (peaks.bandwidth_gbps <= 0 || f32 <= 0 || (work.min_bytes <= 0 && work.flops <= 0))
    return std::nullopt;
  SpeedOfLight s;
  s.work = work;
  s.peak_gbps = peaks.bandwidth_gbps;
  s.memory_ms = work.min_bytes / (peaks.bandwidth_gbps * 1e6);
  double other_flops = work.flops;
  for (const auto& [dtype, flops] : work.matmul_flops) {
    s.compute_ms += flops / (peaks.tflops_for(dtype) * 1e9);
    other_flops -= flops;
  }
  s.compute_ms += std::max(other_flops, 0.0) / (f32 * 1e9);
  s.bound_ms = std::max(s.memory_ms, s.compute_ms);
  s.limit = s.memory_ms >= s.compute_ms ? "memory" : "compute";
  if (candidate_ms && *candidate_ms > 0) s.candidate = achieved(work, s.bound_ms, *candidate_ms);
  if (baseline_ms && *baseline_ms > 0) s.baseline = achieved(work, s.bound_ms, *baseline_ms);
  return s;
}

Json to_json(const SpeedOfLight& s) {
  Json j = {{"work", to_json(s.work)},    {"peak_gbps", s.peak_gbps}, {"memory_ms", s.memory_ms},
            {"compute_ms", s.compute_ms}, {"bound_ms", s.bound_ms},   {"limit", s.limit}};
  if (s.candidate) j["candidate"] = to_json(*s.candidate);
  if (s.baseline) j["baseline"] = to_json(*s.baseline);
  return j;
}

Result<SpeedOfLight> speed_of_light_from_json(const Json& j) {
  if (!j.is_object()) return invalid_argument("speed_of_light: expected an object");
  SpeedOfLight s;
  if (!j.contains("work")) return invalid_argument("speed_of_light: missing field \"work\"");
  KEVIN_ASSIGN_OR_RETURN(s.work, task_work_from_json(j["work"]));
  KEVIN_ASSIGN_OR_RETURN(s.peak_gbps, amount(j, "peak_gbps", 0));
  KEVIN_ASSIGN_OR_RETURN(s.memory_ms, amount(j, "memory_ms", 0));
  KEVIN_ASSIGN_OR_RETURN(s.compute_ms, amount(j, "compute_ms", 0));
  KEVIN_ASSIGN_OR_RETURN(s.bound_ms, amount(j, "bound_ms", 0));
  KEVIN_ASSIGN_OR_RETURN(s.limit, json_get<std::string>(j, "limit"));
  if (s.limit != "memory" && s.limit != "compute")
    return invalid_argument("field \"limit\": expected \"memory\" or \"compute\"");
  KEVIN_ASSIGN_OR_RETURN(s.candidate, achieved_from_json(j, "candidate"));
  KEVIN_ASSIGN_OR_RETURN(s.baseline, achieved_from_json(j, "baseline"));
  return s;
}

}  // namespace kevin::engine
