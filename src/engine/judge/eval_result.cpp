// eval_result.cpp — an evaluation's result to and from its JSON form (docs/eval.md).
#include "engine/judge/eval_result.h"

namespace kevin::engine {

Json to_json(const EvalResult& r) {
  const auto opt = [](const std::optional<double>& v) { return v ? Json(*v) : Json(); };
  Json j = {{"verdict", verdict_name(r.verdict)},
            {"correct", r.correct()},
            {"reason", r.reason},
            {"feedback", r.feedback},
            {"candidate_ms", opt(r.candidate_ms)},
            {"baseline_ms", opt(r.baseline_ms)},
            {"speedup", opt(r.speedup)},
            {"compile_ms", r.compile_ms},
            {"cache_hit", r.cache_hit},
            {"max_abs_error", opt(r.max_abs_error)},
            {"max_rel_error", opt(r.max_rel_error)},
            {"device", r.device_name},
            {"total_ms", r.total_ms},
            {"phases_ms",
             {{"prepare", r.phases.prepare_ms},
              {"start", r.phases.start_ms},
              {"load", r.phases.load_ms},
              {"check", r.phases.check_ms},
              {"time", r.phases.time_ms},
              {"gate_wait", r.phases.gate_wait_ms},
              {"alone", r.phases.alone_ms}}},
            {"sandbox", {{"enforced", r.sandbox_enforced}, {"skipped", r.sandbox_skipped}}}};
  if (r.device_ordinal >= 0) j["device_ordinal"] = r.device_ordinal;
  if (r.speedup_ci) j["speedup_ci"] = Json::array({r.speedup_ci->first, r.speedup_ci->second});
  if (r.timing) j["timing"] = to_json(*r.timing);
  if (r.baseline) j["baseline"] = to_json(*r.baseline);
  if (r.speed_of_light) j["speed_of_light"] = to_json(*r.speed_of_light);
  if (!r.baseline_source.empty()) j["baseline_source"] = r.baseline_source;
  j["baseline_kind"] = baseline_kind_name(r.baseline_kind);
  if (r.eager_baseline_ms) j["eager_baseline_ms"] = *r.eager_baseline_ms;
  if (r.speedup_vs_eager) j["speedup_vs_eager"] = *r.speedup_vs_eager;
  if (r.baseline_retimes_refused) j["baseline_retimes_refused"] = *r.baseline_retimes_refused;
  if (r.harness_overhead_ms) {
    j["clock_check"] = {{"harness_overhead_ms", *r.harness_overhead_ms},
                        {"unaccounted_ms", opt(r.unaccounted_ms)}};
    if (r.recalibrated_overhead_ms)
      j["clock_check"]["recalibrated_overhead_ms"] = *r.recalibrated_overhead_ms;
  }
  if (!r.mismatch.empty()) j["mismatch"] = r.mismatch;
  if (!r.runner_output.empty()) j["printed"] = r.runner_output;
  return j;
}

Result<EvalResult> eval_result_from_json(const Json& j) {
  EvalResult r;
  const auto opt = [](const Json& obj, const char* key, std::optional<double>* out) -> Status {
    if (!obj.contains(key) || obj[key].is_null()) return Status::ok();
    KEVIN_ASSIGN_OR_RETURN(*out, json_get<double>(obj, key));
    return Status::ok();
  };
  KEVIN_ASSIGN_OR_RETURN(std::string verdict, json_get<std::string>(j, "verdict"));
  const auto kind = verdict_from_name(verdict);
  if (!kind) return invalid_argument("unknown verdict \"" + verdict + "\"");
  r.verdict = *kind;
  KEVIN_ASSIGN_OR_RETURN(r.reason, json_get_or<std::string>(j, "reason", ""));
  KEVIN_ASSIGN_OR_RETURN(r.feedback, json_get_or<std::string>(j, "feedback", ""));
  for (const auto& [key, field] :
       {std::pair{"candidate_ms", &r.candidate_ms}, std::pair{"baseline_ms", &r.baseline_ms},
        std::pair{"speedup", &r.speedup}, std::pair{"max_abs_error", &r.max_abs_error},
        std::pair{"max_rel_error", &r.max_rel_error},
        std::pair{"eager_baseline_ms", &r.eager_baseline_ms},
        std::pair{"speedup_vs_eager", &r.speedup_vs_eager}}) {
    KEVIN_RETURN_IF_ERROR(opt(j, key, field));
  }
  KEVIN_ASSIGN_OR_RETURN(r.compile_ms, json_get_or<double>(j, "compile_ms", 0.0));
  KEVIN_ASSIGN_OR_RETURN(r.cache_hit, json_get_or<bool>(j, "cache_hit", false));
  KEVIN_ASSIGN_OR_RETURN(r.device_name, json_get_or<std::string>(j, "device", ""));
  KEVIN_ASSIGN_OR_RETURN(r.device_ordinal, json_get_or<int>(j, "device_ordinal", -1));
  KEVIN_ASSIGN_OR_RETURN(r.total_ms, json_get_or<double>(j, "total_ms", 0.0));
  KEVIN_ASSIGN_OR_RETURN(r.baseline_source, json_get_or<std::string>(j, "baseline_source", ""));
  KEVIN_ASSIGN_OR_RETURN(const std::string kind_name,
                         json_get_or<std::string>(j, "baseline_kind", "eager"));
  const auto baseline_kind = baseline_kind_from_name(kind_name);
  if (!baseline_kind)
    return invalid_argument("field \"baseline_kind\": expected eager or compile, not \"" +
                            kind_name + "\"");
  r.baseline_kind = *baseline_kind;
  if (j.contains("speedup_ci") && !j["speedup_ci"].is_null()) {
    KEVIN_ASSIGN_OR_RETURN(const auto ci, json_get<std::vector<double>>(j, "speedup_ci"));
    if (ci.size() != 2 || !(ci[0] <= ci[1]))
      return invalid_argument("field \"speedup_ci\": expected [low, high] with low <= high");
    r.speedup_ci = std::pair{ci[0], ci[1]};
  }
  if (j.contains("baseline_retimes_refused")) {
    KEVIN_ASSIGN_OR_RETURN(r.baseline_retimes_refused,
                           json_get<int>(j, "baseline_retimes_refused"));
  }
  KEVIN_ASSIGN_OR_RETURN(r.mismatch, json_get_or<std::string>(j, "mismatch", ""));
  KEVIN_ASSIGN_OR_RETURN(r.runner_output, json_get_or<std::string>(j, "printed", ""));
  if (j.contains("timing")) {
    KEVIN_ASSIGN_OR_RETURN(r.timing, timing_stats_from_json(j["timing"]));
  }
  if (j.contains("baseline")) {
    KEVIN_ASSIGN_OR_RETURN(r.baseline, timing_stats_from_json(j["baseline"]));
  }
  if (j.contains("speed_of_light") && !j["speed_of_light"].is_null()) {
    auto s = speed_of_light_from_json(j["speed_of_light"]);
    if (!s.is_ok()) return s.status().with_context("field \"speed_of_light\"");
    r.speed_of_light = *s;
  }
  if (j.contains("clock_check")) {
    KEVIN_RETURN_IF_ERROR(opt(j["clock_check"], "harness_overhead_ms", &r.harness_overhead_ms));
    KEVIN_RETURN_IF_ERROR(opt(j["clock_check"], "unaccounted_ms", &r.unaccounted_ms));
    KEVIN_RETURN_IF_ERROR(
        opt(j["clock_check"], "recalibrated_overhead_ms", &r.recalibrated_overhead_ms));
  }
  if (j.contains("phases_ms")) {
    const Json& p = j["phases_ms"];
    KEVIN_ASSIGN_OR_RETURN(r.phases.prepare_ms, json_get_or<double>(p, "prepare", 0.0));
    KEVIN_ASSIGN_OR_RETURN(r.phases.start_ms, json_get_or<double>(p, "start", 0.0));
    KEVIN_ASSIGN_OR_RETURN(r.phases.load_ms, json_get_or<double>(p, "load", 0.0));
    KEVIN_ASSIGN_OR_RETURN(r.phases.check_ms, json_get_or<double>(p, "check", 0.0));
    KEVIN_ASSIGN_OR_RETURN(r.phases.gate_wait_ms, json_get_or<double>(p, "gate_wait", 0.0));
    KEVIN_ASSIGN_OR_RETURN(r.phases.time_ms, json_get_or<double>(p, "time", 0.0));
    KEVIN_ASSIGN_OR_RETURN(r.phases.alone_ms, json_get_or<double>(p, "alone", 0.0));
  }
  if (j.contains("sandbox")) {
    KEVIN_ASSIGN_OR_RETURN(r.sandbox_enforced,
                           json_get_or<std::vector<std::string>>(j["sandbox"], "enforced", {}));
    KEVIN_ASSIGN_OR_RETURN(r.sandbox_skipped,
                           json_get_or<std::vector<std::string>>(j["sandbox"], "skipped", {}));
  }
  return r;
}

}  // namespace kevin::engine
