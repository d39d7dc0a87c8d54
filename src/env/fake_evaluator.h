// fake_evaluator.h — an Evaluator for tests: no GPU, no Python, no compiler. The verdict is
// read from a directive line in the candidate source, so tests script whole trajectories:
//   // fake: correct speedup=1.5 delay_ms=20
//   // fake: compile_error            (any verdict name; no directive means wrong_answer)
//   // fake: harness_error            (evaluate() returns an internal error: fault injection)
//   // fake: process_exit             (the whole process exits with 137, as if killed: fault
//                                      injection for supervisors and queue workers)
#pragma once

#include <atomic>
#include <string>

#include "env/evaluator.h"

namespace kevin::env {

class FakeEvaluator final : public Evaluator {
 public:
  explicit FakeEvaluator(std::string backend = "cuda", std::string device_name = "Fake GPU")
      : backend_(std::move(backend)), device_name_(std::move(device_name)) {}

  // "Problem <id>:" followed by the task file's text (errors if it cannot be read).
  Result<std::string> problem(const tasks::TaskInfo& task) override;
  Result<engine::EvalResult> evaluate(const tasks::TaskInfo& task,
                                      const std::string& source) override;
  // Judges either format alike (the directive decides), counting KernelBench ones.
  Result<engine::EvalResult> evaluate_as(const tasks::TaskInfo& task, const std::string& source,
                                         engine::CandidateFormat format) override {
    if (format == engine::CandidateFormat::kKernelBench) ++kernelbench_calls_;
    return evaluate(task, source);
  }
  std::string backend() const override { return backend_; }
  std::string device_name() const override { return device_name_; }

  // How many evaluate() calls were made (tests check sharing and resume).
  int calls() const { return calls_.load(); }
  // How many of them were judged as KernelBench answers (evaluate_as).
  int kernelbench_calls() const { return kernelbench_calls_.load(); }

 private:
  std::string backend_, device_name_;
  std::atomic<int> calls_{0};
  std::atomic<int> kernelbench_calls_{0};
};

}  // namespace kevin::env
