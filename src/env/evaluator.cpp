// evaluator.cpp — the Evaluator's default for answers of another format, and
// SharingEvaluator's once-per-pair judging.
#include "env/evaluator.h"

#include "core/file.h"
#include "core/sha256.h"

namespace kevin::env {

Result<engine::EvalResult> Evaluator::evaluate_as(const tasks::TaskInfo& task,
                                                  const std::string& source,
                                                  engine::CandidateFormat format) {
  if (format == engine::CandidateFormat::kKernelBench) {
    return failed_precondition("this evaluator does not judge KernelBench answers");
  }
  return evaluate(task, source);
}

Result<engine::EvalResult> SharingEvaluator::evaluate(const tasks::TaskInfo& task,
                                                      const std::string& source) {
  KEVIN_ASSIGN_OR_RETURN(std::string task_source, read_file(task.path, size_t{16} << 20));
  const std::string key = Sha256().update_field(task_source).update_field(source).hex_digest();
  std::promise<Result<engine::EvalResult>> promise;
  std::shared_future<Result<engine::EvalResult>> earlier;
  {
    MutexLock lock(mu_);
    if (auto it = results_.find(key); it != results_.end()) {
      earlier = it->second;
    } else {
      results_.emplace(key, promise.get_future().share());
    }
  }
  if (earlier.valid()) return earlier.get();
  Result<engine::EvalResult> result = inner_->evaluate(task, source);
  if (!result.is_ok()) {
    MutexLock lock(mu_);
    results_.erase(key);
  }
  promise.set_value(result);
  return result;
}

}  // namespace kevin::env
