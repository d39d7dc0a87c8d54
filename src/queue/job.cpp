// job.cpp — JSON codecs of jobs and results, and the content hash that deduplicates jobs.
#include "queue/job.h"

#include <cctype>
#include <sstream>

#include "core/sha256.h"
#include "engine/build/kernelbench.h"

namespace kevin::queue {
namespace {

const char* kind_name(Job::Kind k) { return k == Job::Kind::kProblem ? "problem" : "evaluate"; }
const char* status_name(JobResult::Status s) {
  switch (s) {
    case JobResult::Status::kOk:
      return "ok";
    case JobResult::Status::kHarnessError:
      return "harness_error";
    case JobResult::Status::kDeadLetter:
      return "dead_letter";
  }
  return "harness_error";
}

}  // namespace

Result<WorkerState> worker_state_from_json(const Json& j) {
  if (!j.is_object()) return invalid_argument("a worker's heartbeat must be a JSON object");
  WorkerState w;
  KEVIN_ASSIGN_OR_RETURN(w.name, json_get<std::string>(j, "name"));
  KEVIN_ASSIGN_OR_RETURN(w.backend, json_get<std::string>(j, "backend"));
  KEVIN_ASSIGN_OR_RETURN(w.model, json_get_or<std::string>(j, "model", ""));
  KEVIN_ASSIGN_OR_RETURN(w.device, json_get_or<std::string>(j, "device", ""));
  return w;
}

std::string describe_workers(const std::vector<WorkerState>& workers) {
  std::string out;
  for (const WorkerState& w : workers) {
    out += (out.empty() ? "" : ", ") + w.name + " (" + w.backend + ", " +
           (w.device.empty() ? w.model : w.device) + ")";
  }
  return out.empty() ? "none" : out;
}

std::string model_key(const std::string& device_name) {
  std::string out;
  for (const char c : device_name) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    } else if (!out.empty() && out.back() != '-') {
      out.push_back('-');
    }
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "unknown" : out;
}

Json to_json(const Job& job) {
  return {{"kind", kind_name(job.kind)},    {"id", job.id},
          {"attempt", job.attempt},         {"task_id", job.task_id},
          {"task_source", job.task_source}, {"candidate", job.candidate},
          {"judging", job.judging},         {"format", job.format}};
}

std::string judging_key(int seeds, const std::string& tolerance, double call_timeout_s,
                        bool allow_degenerate_tasks, const std::string& baseline) {
  std::ostringstream key;
  key << "seeds=" << seeds << " tolerance=" << tolerance << " timeout_s=" << call_timeout_s
      << " degenerate=" << (allow_degenerate_tasks ? "allow" : "refuse");
  // Eager keys stay as they were before there was a choice, so older workers still match.
  if (baseline != "eager") key << " baseline=" << baseline;
  return key.str();
}

Result<Job> job_from_json(const Json& j) {
  Job job;
  KEVIN_ASSIGN_OR_RETURN(std::string kind, json_get<std::string>(j, "kind"));
  if (kind != "evaluate" && kind != "problem")
    return invalid_argument("unknown job kind \"" + kind + "\"");
  job.kind = kind == "problem" ? Job::Kind::kProblem : Job::Kind::kEvaluate;
  KEVIN_ASSIGN_OR_RETURN(job.id, json_get<std::string>(j, "id"));
  KEVIN_ASSIGN_OR_RETURN(job.attempt, json_get<std::string>(j, "attempt"));
  KEVIN_ASSIGN_OR_RETURN(job.task_id, json_get<std::string>(j, "task_id"));
  KEVIN_ASSIGN_OR_RETURN(job.task_source, json_get<std::string>(j, "task_source"));
  KEVIN_ASSIGN_OR_RETURN(job.candidate, json_get_or<std::string>(j, "candidate", ""));
  KEVIN_ASSIGN_OR_RETURN(job.judging, json_get_or<std::string>(j, "judging", ""));
  KEVIN_ASSIGN_OR_RETURN(job.format, json_get_or<std::string>(j, "format", "kevin"));
  if (!engine::format_from_name(job.format))
    return invalid_argument("unknown candidate format \"" + job.format + "\"");
  return job;
}

std::string job_id(Job::Kind kind, const std::string& model, const std::string& task_source,
                   const std::string& candidate, const std::string& judging,
                   const std::string& format) {
  // Lengths first, so no two different inputs concatenate to the same text. kevin's format
  // adds nothing, so the ids of jobs from producers before formats stay as they were.
  const std::string judged_as = format == "kevin" ? judging : judging + " format=" + format;
  const std::string key = std::string(kind_name(kind)) + "\n" + model + "\n" + judged_as + "\n" +
                          std::to_string(task_source.size()) + "\n" + task_source +
                          std::to_string(candidate.size()) + "\n" + candidate;
  return sha256_hex(key);
}

Json to_json(const JobResult& r) {
  Json j = {{"status", status_name(r.status)}, {"worker", r.worker}};
  if (r.eval) j["eval"] = engine::to_json(*r.eval);
  if (!r.problem.empty()) j["problem"] = r.problem;
  if (!r.error.empty()) j["error"] = r.error;
  return j;
}

Result<JobResult> job_result_from_json(const Json& j) {
  JobResult r;
  KEVIN_ASSIGN_OR_RETURN(std::string status, json_get<std::string>(j, "status"));
  if (status == "ok") {
    r.status = JobResult::Status::kOk;
  } else if (status == "harness_error") {
    r.status = JobResult::Status::kHarnessError;
  } else if (status == "dead_letter") {
    r.status = JobResult::Status::kDeadLetter;
  } else {
    return invalid_argument("unknown result status \"" + status + "\"");
  }
  KEVIN_ASSIGN_OR_RETURN(r.worker, json_get_or<std::string>(j, "worker", ""));
  KEVIN_ASSIGN_OR_RETURN(r.problem, json_get_or<std::string>(j, "problem", ""));
  KEVIN_ASSIGN_OR_RETURN(r.error, json_get_or<std::string>(j, "error", ""));
  if (j.contains("eval")) {
    KEVIN_ASSIGN_OR_RETURN(r.eval, engine::eval_result_from_json(j["eval"]));
  }
  return r;
}

}  // namespace kevin::queue
