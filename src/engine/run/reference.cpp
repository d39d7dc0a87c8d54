// reference.cpp — ReferenceSet (de)serialisation and layout arithmetic.
#include "engine/run/reference.h"

#include <cstdint>

#include <algorithm>
#include <cmath>

#include "core/file.h"

namespace kevin::engine {
namespace fs = std::filesystem;

const char* arg_role_name(ArgRole role) {
  switch (role) {
    case ArgRole::kInput:
      return "input";
    case ArgRole::kParameter:
      return "parameter";
    case ArgRole::kBuffer:
      return "buffer";
  }
  return "input";
}

SetLayout layout_of(const std::vector<TensorSpec>& tensors) {
  SetLayout layout;
  uint64_t at = 0;
  for (const auto& t : tensors) {
    layout.offsets.push_back(at);
    at = (at + t.bytes() + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
  }
  layout.set_bytes = std::max<uint64_t>(at, kTensorAlignment);
  return layout;
}

std::pair<size_t, size_t> median_ci_ranks(size_t n) {
  if (n == 0) return {0, 0};
  const double half = static_cast<double>(n) / 2, spread = 0.98 * std::sqrt(static_cast<double>(n));
  const auto lo = static_cast<size_t>(std::max(1.0, std::floor(half - spread)));
  const auto hi =
      static_cast<size_t>(std::min(static_cast<double>(n), std::ceil(1 + half + spread)));
  return {lo, hi};
}

double TimingStats::relative_half_width() const {
  if (calls == 0) return 0;
  if (!has_interval() || median_ms <= 0) return 1e9;
  return (median_hi_ms - median_lo_ms) / (2 * median_ms);
}

TimingStats timing_stats(std::vector<double> ms) {
  TimingStats s;
  if (ms.empty()) return s;
  std::sort(ms.begin(), ms.end());
  const size_t n = ms.size();
  s.calls = static_cast<int>(n);
  const auto [lo, hi] = median_ci_ranks(n);
  s.median_lo_ms = ms[lo - 1];
  s.median_hi_ms = ms[hi - 1];
  s.min_ms = ms.front();
  s.median_ms = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
  s.p90_ms = ms[std::min(n - 1, static_cast<size_t>(std::ceil(0.9 * static_cast<double>(n))) - 1)];
  double sum = 0;
  for (double v : ms) sum += v;
  s.mean_ms = sum / static_cast<double>(n);
  double var = 0;
  for (double v : ms) var += (v - s.mean_ms) * (v - s.mean_ms);
  s.stdev_ms = n > 1 ? std::sqrt(var / static_cast<double>(n - 1)) : 0;
  return s;
}

Json to_json(const TimingStats& t) {
  Json j = {{"median_ms", t.median_ms}, {"min_ms", t.min_ms},     {"p90_ms", t.p90_ms},
            {"mean_ms", t.mean_ms},     {"stdev_ms", t.stdev_ms}, {"calls", t.calls}};
  if (t.measured_at != 0) j["measured_at"] = t.measured_at;  // baselines only
  if (t.has_interval()) {
    j["median_lo_ms"] = t.median_lo_ms;
    j["median_hi_ms"] = t.median_hi_ms;
  }
  return j;
}

const char* baseline_kind_name(BaselineKind kind) {
  return kind == BaselineKind::kCompile ? "compile" : "eager";
}

std::optional<BaselineKind> baseline_kind_from_name(std::string_view name) {
  if (name == "eager") return BaselineKind::kEager;
  if (name == "compile") return BaselineKind::kCompile;
  return std::nullopt;
}

Result<TimingStats> timing_stats_from_json(const Json& j) {
  TimingStats t;
  KEVIN_ASSIGN_OR_RETURN(t.median_ms, json_get<double>(j, "median_ms"));
  KEVIN_ASSIGN_OR_RETURN(t.min_ms, json_get<double>(j, "min_ms"));
  KEVIN_ASSIGN_OR_RETURN(t.p90_ms, json_get<double>(j, "p90_ms"));
  KEVIN_ASSIGN_OR_RETURN(t.mean_ms, json_get_or<double>(j, "mean_ms", t.median_ms));
  KEVIN_ASSIGN_OR_RETURN(t.stdev_ms, json_get_or<double>(j, "stdev_ms", 0.0));
  KEVIN_ASSIGN_OR_RETURN(t.calls, json_get<int>(j, "calls"));
  KEVIN_ASSIGN_OR_RETURN(t.measured_at, json_get_or<int64_t>(j, "measured_at", 0));
  KEVIN_ASSIGN_OR_RETURN(t.median_lo_ms, json_get_or<double>(j, "median_lo_ms", 0.0));
  KEVIN_ASSIGN_OR_RETURN(t.median_hi_ms, json_get_or<double>(j, "median_hi_ms", 0.0));
  if (t.has_interval() && !(t.median_lo_ms <= t.median_ms && t.median_ms <= t.median_hi_ms))
    return invalid_argument("median_lo_ms <= median_ms <= median_hi_ms does not hold");
  return t;
}

std::vector<TensorSpec> ReferenceSet::input_tensors() const {
  std::vector<TensorSpec> v;
  for (const auto& a : inputs) v.push_back(a.tensor);
  return v;
}

namespace {

Result<ArgRole> role_from_name(const std::string& s) {
  if (s == "input") return ArgRole::kInput;
  if (s == "parameter") return ArgRole::kParameter;
  if (s == "buffer") return ArgRole::kBuffer;
  return invalid_argument("unknown argument role '" + s + "'");
}

Status check_size(const fs::path& file, size_t sets, const std::vector<TensorSpec>& tensors) {
  // The sizes come from meta.json, and arithmetic that wrapped would let short files pass for
  // huge tensors. A tensor adds at most its bytes and one alignment to a set, so when that
  // bound does not wrap, neither does layout_of.
  uint64_t bound = kTensorAlignment;
  for (const auto& t : tensors) {
    if (__builtin_add_overflow(bound, t.bytes() + kTensorAlignment, &bound)) {
      return invalid_argument("reference meta: the tensors' sizes overflow");
    }
  }
  uint64_t expected = 0;
  if (__builtin_mul_overflow(uint64_t{sets}, layout_of(tensors).set_bytes, &expected)) {
    return invalid_argument("reference meta: the sets' size overflows");
  }
  std::error_code ec;
  const auto size = fs::file_size(file, ec);
  if (ec) return not_found("missing reference data " + file.string());
  if (size != expected) {
    return invalid_argument(file.string() + " has " + std::to_string(size) + " bytes, expected " +
                            std::to_string(expected));
  }
  return Status::ok();
}

// The reference set in `dir` described by `text`, its meta.json.
Result<ReferenceSet> reference_from_meta(const fs::path& dir, const std::string& text) {
  KEVIN_ASSIGN_OR_RETURN(Json meta, parse_json(text));
  KEVIN_ASSIGN_OR_RETURN(int protocol, json_get<int>(meta, "protocol"));
  if (protocol != kReferenceProtocol) {
    return failed_precondition("reference data protocol " + std::to_string(protocol) +
                               " (this build reads " + std::to_string(kReferenceProtocol) + ")");
  }
  ReferenceSet ref;
  ref.dir = dir;
  KEVIN_ASSIGN_OR_RETURN(ref.task_name, json_get<std::string>(meta, "task"));
  KEVIN_ASSIGN_OR_RETURN(ref.backend, json_get<std::string>(meta, "backend"));
  KEVIN_ASSIGN_OR_RETURN(ref.device_name, json_get<std::string>(meta, "device_name"));
  KEVIN_ASSIGN_OR_RETURN(ref.torch_version, json_get<std::string>(meta, "torch_version"));
  KEVIN_ASSIGN_OR_RETURN(ref.num_sets, json_get<size_t>(meta, "num_sets"));
  KEVIN_ASSIGN_OR_RETURN(ref.scalar_names,
                         json_get<std::vector<std::string>>(meta, "scalar_names"));
  KEVIN_ASSIGN_OR_RETURN(ref.scalar_kinds,
                         json_get<std::vector<std::string>>(meta, "scalar_kinds"));
  KEVIN_ASSIGN_OR_RETURN(ref.forward_args,
                         json_get<std::vector<std::string>>(meta, "forward_args"));
  ref.init_inputs = meta.value("init_inputs", Json());
  if (ref.scalar_kinds.size() != ref.scalar_names.size())
    return invalid_argument("reference meta: scalar_kinds and scalar_names disagree");
  KEVIN_ASSIGN_OR_RETURN(ref.scalars, json_get<std::vector<std::vector<double>>>(meta, "scalars"));
  KEVIN_ASSIGN_OR_RETURN(ref.num_timing_sets, json_get<size_t>(meta, "num_timing_sets"));
  KEVIN_ASSIGN_OR_RETURN(ref.timing_scalars,
                         json_get<std::vector<std::vector<double>>>(meta, "timing_scalars"));
  for (const auto& item : meta.value("inputs", Json::array())) {
    ArgSpec arg;
    KEVIN_ASSIGN_OR_RETURN(arg.tensor, tensor_spec_from_json(item));
    KEVIN_ASSIGN_OR_RETURN(std::string role, json_get<std::string>(item, "role"));
    KEVIN_ASSIGN_OR_RETURN(arg.role, role_from_name(role));
    ref.inputs.push_back(std::move(arg));
  }
  for (const auto& item : meta.value("outputs", Json::array())) {
    KEVIN_ASSIGN_OR_RETURN(TensorSpec out, tensor_spec_from_json(item));
    ref.outputs.push_back(std::move(out));
  }
  if (ref.num_sets == 0 || ref.scalars.size() != ref.num_sets) {
    return invalid_argument("reference meta: num_sets and scalars disagree");
  }
  // Timing needs sets of its own: data without any cannot be timed under protocol 2.
  if (ref.num_timing_sets == 0 || ref.timing_scalars.size() != ref.num_timing_sets) {
    return invalid_argument("reference meta: num_timing_sets and timing_scalars disagree");
  }
  if (ref.outputs.empty()) return invalid_argument("reference meta: the task has no outputs");
  if (meta.contains("work") && !meta["work"].is_null()) {
    KEVIN_ASSIGN_OR_RETURN(ref.work, task_work_from_json(meta["work"]));
  }
  if (meta.contains("has_cpu_sizes") && !meta["has_cpu_sizes"].is_null()) {
    KEVIN_ASSIGN_OR_RETURN(ref.has_cpu_sizes, json_get<bool>(meta, "has_cpu_sizes"));
  }
  if (meta.contains("baseline") && !meta["baseline"].is_null()) {
    KEVIN_ASSIGN_OR_RETURN(TimingStats b, timing_stats_from_json(meta["baseline"]));
    ref.baseline = b;
  }
  const std::vector<TensorSpec> inputs = ref.input_tensors();
  KEVIN_RETURN_IF_ERROR(check_size(ref.inputs_file(), ref.num_sets, inputs));
  KEVIN_RETURN_IF_ERROR(check_size(ref.expected_file(), ref.num_sets, ref.outputs));
  KEVIN_RETURN_IF_ERROR(check_size(ref.timing_inputs_file(), ref.num_timing_sets, inputs));
  KEVIN_RETURN_IF_ERROR(check_size(ref.timing_expected_file(), ref.num_timing_sets, ref.outputs));
  return ref;
}

}  // namespace

Result<ReferenceSet> load_reference(const fs::path& dir) {
  const fs::path meta = dir / "meta.json";
  KEVIN_ASSIGN_OR_RETURN(std::string text, read_file(meta));
  auto ref = reference_from_meta(dir, text);
  // Every reason names the set: a damaged one in a store is found and removed by hand.
  if (!ref.is_ok()) return ref.status().with_context(meta.string());
  return ref;
}

Json reference_meta_json(const ReferenceSet& ref) {
  Json inputs = Json::array();
  for (const auto& a : ref.inputs) {
    Json j = to_json(a.tensor);
    j["role"] = arg_role_name(a.role);
    inputs.push_back(j);
  }
  Json outputs = Json::array();
  for (const auto& o : ref.outputs) outputs.push_back(to_json(o));
  return {{"protocol", kReferenceProtocol},
          {"task", ref.task_name},
          {"backend", ref.backend},
          {"device_name", ref.device_name},
          {"torch_version", ref.torch_version},
          {"num_sets", ref.num_sets},
          {"scalar_names", ref.scalar_names},
          {"scalars", ref.scalars},
          {"scalar_kinds", ref.scalar_kinds},
          {"init_inputs", ref.init_inputs},
          {"forward_args", ref.forward_args},
          {"num_timing_sets", ref.num_timing_sets},
          {"timing_scalars", ref.timing_scalars},
          {"inputs", inputs},
          {"outputs", outputs},
          {"work", ref.work ? to_json(*ref.work) : Json()},
          {"has_cpu_sizes", ref.has_cpu_sizes ? Json(*ref.has_cpu_sizes) : Json()},
          {"baseline", ref.baseline ? to_json(*ref.baseline) : Json()}};
}

}  // namespace kevin::engine
