// kernelgym.cpp — request validation with KernelGYM's ranges, the record store behind
// idempotency, and the mapping of kevin's verdicts onto EvaluationResponse fields.
#include "server/kernelgym.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <optional>
#include <variant>
#include <vector>

#include "core/parallel.h"

namespace kevin::server {
namespace {

constexpr const char* kErrorHeader = "X-Error-Code";

struct GymRequest {
  std::string task_id, kernel_code;
  std::optional<std::string> reference_code, problem_id;
  bool force_refresh = false;
};

// Integer fields KernelGYM bounds, with its ranges. kevin's engine applies its own trial
// counts and timeouts (docs/serve.md says why); out-of-range values are still refused.
struct Range {
  const char* name;
  int64_t lo, hi;
};
constexpr Range kRanges[] = {{"num_correct_trials", 1, 20},
                             {"num_perf_trials", 1, 1000},
                             {"num_warmup", 0, 100},
                             {"timeout", 10, 3600}};

std::optional<std::string> optional_string(const Json& j, const char* key, std::string* error) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  if (!j[key].is_string()) {
    *error = std::string("\"") + key + "\" must be a string";
    return std::nullopt;
  }
  return j[key].get<std::string>();
}

std::variant<GymRequest, std::string> parse_request(const Json& j) {
  if (!j.is_object()) return std::string("the request must be a JSON object");
  std::string error;
  GymRequest r;
  const auto task_id = optional_string(j, "task_id", &error);
  const auto kernel = optional_string(j, "kernel_code", &error);
  r.reference_code = optional_string(j, "reference_code", &error);
  r.problem_id = optional_string(j, "problem_id", &error);
  if (!error.empty()) return error;
  if (!task_id || task_id->empty() || task_id->size() > 256)
    return std::string("\"task_id\" is required (1-256 characters)");
  if (!kernel) return std::string("\"kernel_code\" is required");
  r.task_id = *task_id;
  r.kernel_code = *kernel;
  if (j.contains("force_refresh") && !j["force_refresh"].is_null()) {
    if (!j["force_refresh"].is_boolean()) return std::string("\"force_refresh\" must be a boolean");
    r.force_refresh = j["force_refresh"].get<bool>();
  }
  for (const Range& range : kRanges) {
    if (!j.contains(range.name) || j[range.name].is_null()) continue;
    const Json& v = j[range.name];
    if (!v.is_number() || v.get<double>() < static_cast<double>(range.lo) ||
        v.get<double>() > static_cast<double>(range.hi)) {
      return std::string("\"") + range.name + "\" must be a number in " + std::to_string(range.lo) +
             ".." + std::to_string(range.hi);
    }
  }
  if (j.contains("backend") && j["backend"].is_string() &&
      j["backend"].get<std::string>() == "triton") {
    return std::string(
        "backend \"triton\" is not judged by kevin: send CUDA or C++ source with backend \"cuda\"");
  }
  return r;
}

// KernelBench's ModelNew answers are a Python module, not kevin's C ABI.
bool is_python_model(const std::string& code) {
  return code.find("class ModelNew") != std::string::npos &&
         code.find("kevin_forward") == std::string::npos;
}

bool compiled(VerdictKind v) {
  return v == VerdictKind::kRuntimeError || v == VerdictKind::kTimeout ||
         v == VerdictKind::kWrongAnswer || v == VerdictKind::kCorrect;
}

Json error_code_of(VerdictKind v) {
  switch (v) {
    case VerdictKind::kCorrect:
      return nullptr;
    case VerdictKind::kParseError:
      return "SYNTAX_ERROR";
    case VerdictKind::kCompileError:
      return "COMPILATION_ERROR";
    case VerdictKind::kRuntimeError:
      return "RUNTIME_ERROR";
    case VerdictKind::kTimeout:
      return "TIMEOUT_ERROR";
    case VerdictKind::kWrongAnswer:
      return "CORRECTNESS_ERROR";
    case VerdictKind::kRejected:
      return "VALIDATION_ERROR";
  }
  return "UNKNOWN_ERROR";
}

Json optional_number(const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); }

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

Json verdict_response(const std::string& task_id, VerdictKind verdict, const std::string& feedback,
                      const engine::EvalResult* eval, const std::string& submitted_at,
                      double seconds) {
  Json metadata = {{"verdict", verdict_name(verdict)}, {"feedback", feedback}};
  if (eval) {
    metadata["reason"] = eval->reason;
    metadata["max_abs_error"] = optional_number(eval->max_abs_error);
    metadata["device"] = eval->device_name;
    metadata["kevin"] = engine::to_json(*eval);
  }
  const bool correct = verdict == VerdictKind::kCorrect;
  return {{"task_id", task_id},
          {"status", "completed"},
          {"compiled", compiled(verdict)},
          {"correctness", correct},
          {"decoy_kernel", verdict == VerdictKind::kRejected},
          {"reference_runtime", eval ? optional_number(eval->baseline_ms) : Json(nullptr)},
          {"kernel_runtime", eval && correct ? optional_number(eval->candidate_ms) : Json(nullptr)},
          {"speedup", eval && correct ? optional_number(eval->speedup) : Json(nullptr)},
          {"metadata", metadata},
          {"error_message", correct ? Json(nullptr) : Json(feedback)},
          {"error_code", error_code_of(verdict)},
          {"submitted_at", submitted_at},
          {"completed_at", iso_time_now()},
          {"processing_time", seconds}};
}

Json failed_response(const std::string& task_id, const std::string& message, const char* code,
                     const std::string& submitted_at, double seconds) {
  return {{"task_id", task_id},
          {"status", "failed"},
          {"compiled", false},
          {"correctness", false},
          {"decoy_kernel", false},
          {"reference_runtime", nullptr},
          {"kernel_runtime", nullptr},
          {"speedup", nullptr},
          {"metadata", Json::object()},
          {"error_message", message},
          {"error_code", code},
          {"submitted_at", submitted_at},
          {"completed_at", iso_time_now()},
          {"processing_time", seconds}};
}

HttpReply reply_of(unsigned status, const Json& body) {
  HttpReply reply = json_reply(status, body);
  if (status == 400) reply.headers.emplace_back(kErrorHeader, "VALIDATION_ERROR");
  if (status >= 500) reply.headers.emplace_back(kErrorHeader, "SYSTEM_ERROR");
  return reply;
}

}  // namespace

std::string iso_time_now() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() %
      1000000;
  std::tm utc{};
  gmtime_r(&t, &utc);
  char text[64];
  std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%06lld+00:00", utc.tm_year + 1900,
                utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                static_cast<long long>(micros));
  return text;
}

HttpReply KernelGymApi::evaluate(std::string_view body) {
  auto parsed = parse_json(body, {64u << 20, 32});
  if (!parsed.is_ok())
    return reply_of(400, {{"detail", "the body is not JSON: " + parsed.status().message()}});
  const Outcome outcome = evaluate_request(*parsed);
  return reply_of(outcome.http_status, outcome.response);
}

HttpReply KernelGymApi::evaluate_batch(std::string_view body) {
  auto parsed = parse_json(body, {256u << 20, 32});
  if (!parsed.is_ok())
    return reply_of(400, {{"detail", "the body is not JSON: " + parsed.status().message()}});
  const Json& j = *parsed;
  if (!j.is_object() || !j.contains("tasks") || !j["tasks"].is_array()) {
    return reply_of(
        400, {{"detail", "a batch is {\"batch_id\": …, \"tasks\": [EvaluationRequest, …]}"}});
  }
  const std::string submitted_at = iso_time_now();
  const Json& tasks = j["tasks"];
  std::vector<Outcome> outcomes(tasks.size());
  for_each_index(tasks.size(), static_cast<size_t>(std::max(batch_concurrency_, 1)),
                 [&](size_t i) { outcomes[i] = evaluate_request(tasks[i]); });
  Json results = Json::array();
  size_t completed = 0, failed = 0;
  for (const Outcome& o : outcomes) {
    const bool done = o.http_status == 200 && o.response.value("status", "") == "completed";
    (done ? completed : failed) += 1;
    results.push_back(o.response);
  }
  const std::string batch_status = failed == 0      ? "completed"
                                   : completed == 0 ? "failed"
                                                    : "partial";
  return reply_of(200, {{"batch_id", j.value("batch_id", Json(nullptr))},
                        {"total_tasks", tasks.size()},
                        {"completed_tasks", completed},
                        {"failed_tasks", failed},
                        {"results", results},
                        {"batch_status", batch_status},
                        {"submitted_at", submitted_at},
                        {"completed_at", iso_time_now()}});
}

KernelGymApi::Outcome KernelGymApi::evaluate_request(const Json& request) {
  auto parsed = parse_request(request);
  if (auto* error = std::get_if<std::string>(&parsed)) return {{{"detail", *error}}, 400};
  const GymRequest& r = std::get<GymRequest>(parsed);
  const bool kernelbench = service_->evaluator()->judges_kernelbench();
  if (is_python_model(r.kernel_code) && !kernelbench) {
    return {{{"detail",
              "kernel_code is a KernelBench ModelNew module; this server judges kevin's C ABI only "
              "(extern \"C\" "
              "kevin_forward in CUDA or C++): start it with --format auto or kernelbench "
              "(docs/serve.md)"}},
            400};
  }
  if (!r.reference_code && !r.problem_id) {
    return {{{"detail",
              "give \"reference_code\" (the PyTorch task) or \"problem_id\" (a served task)"}},
            400};
  }
  std::string submitted_at;
  if (auto stored = stored_or_claimed(r.task_id, r.force_refresh, &submitted_at)) return *stored;
  Outcome outcome = run(r.task_id, request, submitted_at);
  store(r.task_id, outcome);
  return outcome;
}

std::optional<KernelGymApi::Outcome> KernelGymApi::stored_or_claimed(const std::string& task_id,
                                                                     bool force_refresh,
                                                                     std::string* submitted_at) {
  MutexLock lock(mu_);
  if (records_.count(task_id) > 0) {
    while (processing(task_id)) finished_.wait(mu_);
    const auto it = records_.find(task_id);
    if (it != records_.end() && !force_refresh)
      return Outcome{it->second.response, it->second.http_status};
  }
  Record& record = records_[task_id];
  record = Record{};
  record.submitted_at = iso_time_now();
  order_.push_back(task_id);
  ++active_;
  *submitted_at = record.submitted_at;
  return std::nullopt;
}

bool KernelGymApi::processing(const std::string& task_id) const {
  const auto it = records_.find(task_id);
  return it != records_.end() && it->second.status == "processing";
}

KernelGymApi::Outcome KernelGymApi::run(const std::string& task_id, const Json& request,
                                        const std::string& submitted_at) {
  const auto start = std::chrono::steady_clock::now();
  const GymRequest r = std::get<GymRequest>(parse_request(request));
  Result<tasks::TaskInfo> task = r.reference_code ? service_->adhoc_task(*r.reference_code)
                                                  : service_->find_task(*r.problem_id);
  if (!task.is_ok()) {
    return {failed_response(task_id, task.status().message(), "VALIDATION_ERROR", submitted_at,
                            seconds_since(start)),
            400};
  }
  const env::Action action = env::read_reply(
      r.kernel_code, reply_rules(*service_->evaluator(), env::Unfenced::kAlwaysSource));
  if (!action.parsed) {
    return {verdict_response(task_id, VerdictKind::kParseError, action.parse_error, nullptr,
                             submitted_at, seconds_since(start)),
            200};
  }
  auto result = service_->evaluate(*task, action.code, "kernelgym " + task_id);
  if (!result.is_ok()) {
    const bool stopping = result.status().code() == StatusCode::kUnavailable;
    return {failed_response(task_id, result.status().message(),
                            stopping ? "RESOURCE_ERROR" : "SYSTEM_ERROR", submitted_at,
                            seconds_since(start)),
            stopping ? 503u : 500u};
  }
  return {verdict_response(task_id, result->verdict, result->feedback, &*result, submitted_at,
                           seconds_since(start)),
          200};
}

void KernelGymApi::store(const std::string& task_id, const Outcome& outcome) {
  {
    MutexLock lock(mu_);
    Record& record = records_[task_id];
    record.response = outcome.response;
    record.http_status = outcome.http_status;
    record.status = outcome.http_status == 200 ? "completed" : "failed";
    --active_;
    ++processed_;
    // A request refused before evaluation (400) or a harness failure leaves a failed record:
    // a retry with the same task_id evaluates again instead of replaying the failure.
    if (outcome.http_status != 200) records_.erase(task_id);
    while ((records_.size() > max_records_ || order_.size() > 2 * max_records_) &&
           !order_.empty()) {
      const std::string oldest = order_.front();
      order_.pop_front();
      auto it = records_.find(oldest);
      if (it != records_.end() && it->second.status != "processing") records_.erase(it);
    }
  }
  finished_.notify_all();
}

HttpReply KernelGymApi::status(const std::string& task_id) const {
  MutexLock lock(mu_);
  const auto it = records_.find(task_id);
  if (it == records_.end()) return reply_of(404, {{"detail", "task " + task_id + " not found"}});
  const bool done = it->second.status != "processing";
  return reply_of(200, {{"task_id", task_id},
                        {"status", it->second.status},
                        {"progress", done ? 1.0 : 0.0},
                        {"estimated_completion", nullptr},
                        {"queue_position", nullptr},
                        {"assigned_device", service_->evaluator()->device_name()}});
}

HttpReply KernelGymApi::results(const std::string& task_id) const {
  MutexLock lock(mu_);
  const auto it = records_.find(task_id);
  if (it == records_.end() || it->second.status == "processing") {
    return reply_of(404, {{"detail", "no result for task " + task_id}});
  }
  return reply_of(200, it->second.response);
}

int KernelGymApi::active() const {
  MutexLock lock(mu_);
  return active_;
}

uint64_t KernelGymApi::processed() const {
  MutexLock lock(mu_);
  return processed_;
}

}  // namespace kevin::server
