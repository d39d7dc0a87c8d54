// evaluator.cpp — EngineEvaluator: the reference provider, compile driver and judge wired
// together, with evaluation sharing and a concurrency limit.
#include "env/evaluator.h"

#include <algorithm>
#include <thread>

#include "core/file.h"
#include "core/sha256.h"
#include "sys/cuda_probe.h"
#include "tasks/problem.h"

namespace kevin::env {
namespace fs = std::filesystem;

Result<std::unique_ptr<EngineEvaluator>> EngineEvaluator::create(const EngineOptions& options) {
  std::unique_ptr<EngineEvaluator> ev(new EngineEvaluator(options));
  if (options.backend == engine::Backend::kCuda) {
    std::string why;
    const int n = sys::cuda_device_count(&why);
    if (n == 0) return failed_precondition("the CUDA backend needs a GPU: " + why + " (use --backend cpu)");
    if (options.device >= n) {
      return invalid_argument("--device " + std::to_string(options.device) + ": only " + std::to_string(n) + " CUDA devices");
    }
    ev->device_name_ = sys::cuda_device_name(options.device);
  } else {
    ev->device_name_ = "CPU";
  }
  KEVIN_ASSIGN_OR_RETURN(auto tolerance, engine::ToleranceProfile::parse(options.tolerance));
  if (!fs::exists(options.runner_path)) return not_found("kevin-runner not found: " + options.runner_path.string());

  tasks::ProviderOptions p;
  p.cache_dir = options.cache_dir;
  p.worker.script = options.share_dir / "reference_worker.py";
  if (!options.python.empty()) p.worker.python_override = options.python;
  p.num_sets = options.seeds;
  p.seed_ttl = options.fresh_seeds ? std::chrono::seconds(0) : std::chrono::seconds(3600);
  p.timing_budget_ms = options.timing_budget_ms;
  p.max_calls = options.max_timed_calls;
  ev->provider_ = std::make_unique<tasks::ReferenceProvider>(p);

  engine::CompilerConfig c;
  c.backend = options.backend;
  c.cache_dir = options.cache_dir;
  c.abi_include_dir = options.share_dir;
  KEVIN_ASSIGN_OR_RETURN(auto driver, engine::CompileDriver::create(c));
  ev->compiler_ = std::make_unique<engine::CompileDriver>(std::move(driver));

  engine::EvalConfig e;
  e.backend = options.backend;
  e.device = options.device;
  e.tolerance = tolerance;
  e.runner_path = options.runner_path;
  e.sandbox = options.sandbox;
  e.max_timed_calls = options.max_timed_calls;
  e.timing_budget_ms = options.timing_budget_ms;
  e.call_timeout = std::chrono::milliseconds(static_cast<int64_t>(options.call_timeout_s * 1000));
  e.gate = &ev->gate_;
  ev->judge_ = std::make_unique<engine::Judge>(*ev->compiler_, e);
  ev->max_running_ = options.jobs > 0 ? options.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return ev;
}

std::string EngineEvaluator::device_name() const { return device_name_; }

Result<std::string> EngineEvaluator::problem(const tasks::TaskInfo& task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = problems_.find(task.id); it != problems_.end()) return it->second;
  }
  KEVIN_ASSIGN_OR_RETURN(std::string source, read_file(task.path));
  KEVIN_ASSIGN_OR_RETURN(Json reply, provider_->describe(task.path, backend()));
  KEVIN_ASSIGN_OR_RETURN(tasks::ArgumentList args, tasks::argument_list_from_json(reply));
  std::string text = tasks::problem_statement(task, source, args, backend());
  std::lock_guard<std::mutex> lock(mu_);
  problems_[task.id] = text;
  return text;
}

Result<engine::ReferenceSet> EngineEvaluator::reference(const fs::path& task) {
  return provider_->get(task, backend(), options_.device);
}

Result<engine::EvalResult> EngineEvaluator::judge(const std::string& source, const engine::ReferenceSet& ref) {
  {
    std::unique_lock<std::mutex> lock(mu_);
    slot_free_.wait(lock, [&] { return running_ < max_running_; });
    ++running_;
  }
  auto result = judge_->evaluate(source, ref);
  {
    std::lock_guard<std::mutex> lock(mu_);
    --running_;
  }
  slot_free_.notify_one();
  return result;
}

Result<engine::EvalResult> EngineEvaluator::evaluate(const tasks::TaskInfo& task, const std::string& source) {
  KEVIN_ASSIGN_OR_RETURN(engine::ReferenceSet ref, reference(task.path));
  return judge(source, ref);
}

int EngineEvaluator::in_flight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return running_;
}

Result<engine::EvalResult> SharingEvaluator::evaluate(const tasks::TaskInfo& task, const std::string& source) {
  KEVIN_ASSIGN_OR_RETURN(std::string task_source, read_file(task.path, size_t{16} << 20));
  const std::string key = Sha256().update_field(task_source).update_field(source).hex_digest();
  std::promise<Result<engine::EvalResult>> promise;
  std::shared_future<Result<engine::EvalResult>> earlier;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = results_.find(key); it != results_.end()) {
      earlier = it->second;
    } else {
      results_.emplace(key, promise.get_future().share());
    }
  }
  if (earlier.valid()) return earlier.get();
  Result<engine::EvalResult> result = inner_->evaluate(task, source);
  if (!result.is_ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    results_.erase(key);
  }
  promise.set_value(result);
  return result;
}

}  // namespace kevin::env
