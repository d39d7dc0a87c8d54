// evaluator.h — the environment's view of the engine: a task's problem statement and the
// evaluation of one candidate source, seen through the engine's light result header alone.
// EngineEvaluator (engine_evaluator.h) is the real one; FakeEvaluator (fake_evaluator.h)
// stands in for it in tests so rollouts, rewards, servers and trainers run without a GPU or
// Python; SharingEvaluator below judges each distinct pair once over either.
#pragma once

#include <future>
#include <map>
#include <string>

#include "core/device_gate.h"
#include "core/mutex.h"
#include "engine/judge/eval_result.h"
#include "engine/build/kernelbench.h"
#include "tasks/suite.h"

namespace kevin::env {

class Evaluator {
 public:
  virtual ~Evaluator() = default;

  // The task as the model sees it (PyTorch source and ABI argument list; tasks::
  // problem_statement). Cached per task. Errors: the task file is missing or broken.
  virtual Result<std::string> problem(const tasks::TaskInfo& task) = 0;
  // Judges one candidate source. Whatever the candidate does is in the EvalResult; an error
  // Status means the harness itself failed (reference data, runner binary). Thread-safe.
  virtual Result<engine::EvalResult> evaluate(const tasks::TaskInfo& task,
                                              const std::string& source) = 0;
  // Judges one candidate in the format given rather than by this evaluator's own setting (a
  // queue worker judges in the producer's). The default judges kevin's ABI with evaluate()
  // and refuses KernelBench answers (kFailedPrecondition); evaluators that judge them override.
  virtual Result<engine::EvalResult> evaluate_as(const tasks::TaskInfo& task,
                                                 const std::string& source,
                                                 engine::CandidateFormat format);
  // "cuda" or "cpu", and the device name a prompt names ("NVIDIA H200", "CPU").
  virtual std::string backend() const = 0;
  virtual std::string device_name() const = 0;
  // The gate that gives this evaluator's timing CUDA device `device` alone, for other GPU work
  // of the process (the trainer's sampling and updates) to hold shared, so that it never
  // runs during a timed call; nullptr when nothing is timed on that device. Borrowed: lives
  // as long as the evaluator.
  virtual DeviceGate* device_gate(int /*device*/) { return nullptr; }
  // The answers models are asked for: kevin's ABI, or KernelBench's ModelNew (--format
  // kernelbench): prompts, problem statements and response parsing follow it.
  virtual engine::CandidateFormat answer_format() const { return engine::CandidateFormat::kKevin; }
  // Whether KernelBench answers are judged at all (--format kernelbench or auto, with PyTorch's
  // extension toolchain found).
  virtual bool judges_kernelbench() const { return false; }
};

// Judges each distinct (task content, source) pair once, over any Evaluator: a second
// request for the same pair, even one arriving while the first is running, gets the first
// result. Harness failures are not kept, so they can be retried. Thread-safe.
class SharingEvaluator final : public Evaluator {
 public:
  // `inner` is borrowed and must outlive this object.
  explicit SharingEvaluator(Evaluator* inner) : inner_(inner) {}

  Result<std::string> problem(const tasks::TaskInfo& task) override {
    return inner_->problem(task);
  }
  Result<engine::EvalResult> evaluate(const tasks::TaskInfo& task,
                                      const std::string& source) override;
  std::string backend() const override { return inner_->backend(); }
  std::string device_name() const override { return inner_->device_name(); }
  DeviceGate* device_gate(int device) override { return inner_->device_gate(device); }

 private:
  Evaluator* inner_;
  Mutex mu_;
  // By (task, source) hash.
  std::map<std::string, std::shared_future<Result<engine::EvalResult>>> results_ GUARDED_BY(mu_);
};

}  // namespace kevin::env
