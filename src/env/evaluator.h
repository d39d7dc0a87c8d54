// evaluator.h — the environment's view of the engine: a task's problem statement and the
// evaluation of one candidate source. EngineEvaluator is the real one (reference worker,
// compile driver, judge, one GPU); FakeEvaluator (fake_evaluator.h) stands in for it in
// tests so rollouts, rewards, servers and trainers can be exercised without a GPU or Python.
#pragma once

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "engine/judge.h"
#include "tasks/reference_provider.h"
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
  virtual Result<engine::EvalResult> evaluate(const tasks::TaskInfo& task, const std::string& source) = 0;
  // "cuda" or "cpu", and the device name a prompt names ("NVIDIA H200", "CPU").
  virtual std::string backend() const = 0;
  virtual std::string device_name() const = 0;
};

struct EngineOptions {
  engine::Backend backend = engine::Backend::kCuda;
  int device = 0;
  std::filesystem::path cache_dir;       // reference data, baselines, builds
  std::filesystem::path share_dir;       // kevin_abi.h and reference_worker.py
  std::filesystem::path runner_path;     // the kevin-runner executable
  std::string python;                    // interpreter override ("" = discover)
  int seeds = 5;                         // K
  bool fresh_seeds = false;
  std::string tolerance = "default";
  bool sandbox = true;
  double call_timeout_s = 20;
  double timing_budget_ms = 2000;
  int max_timed_calls = 100;
  int jobs = 0;                          // concurrent evaluations; 0 = CPU cores
};

// The engine behind the Evaluator interface: at most `jobs` evaluations run at a time, and
// timing holds the GPU exclusively (engine::DeviceGate). Thread-safe.
class EngineEvaluator final : public Evaluator {
 public:
  // Errors: kFailedPrecondition (CUDA backend without a GPU), kInvalidArgument (bad
  // tolerance or device), kNotFound (runner missing).
  static Result<std::unique_ptr<EngineEvaluator>> create(const EngineOptions& options);

  Result<std::string> problem(const tasks::TaskInfo& task) override;
  Result<engine::EvalResult> evaluate(const tasks::TaskInfo& task, const std::string& source) override;
  std::string backend() const override { return engine::backend_name(options_.backend); }
  std::string device_name() const override;

  // Reference data of the task file at `task` (prepared on first use, then cached on disk
  // by the provider under its seed-set policy).
  Result<engine::ReferenceSet> reference(const std::filesystem::path& task);
  // Judges `source` against `ref` without sharing or caching (kevin eval's path).
  Result<engine::EvalResult> judge(const std::string& source, const engine::ReferenceSet& ref);
  // Evaluations currently running (for progress displays).
  int in_flight() const;

 private:
  explicit EngineEvaluator(EngineOptions options) : options_(std::move(options)) {}

  EngineOptions options_;
  engine::DeviceGate gate_;
  std::unique_ptr<tasks::ReferenceProvider> provider_;
  std::unique_ptr<engine::CompileDriver> compiler_;
  std::unique_ptr<engine::Judge> judge_;

  mutable std::mutex mu_;
  std::condition_variable slot_free_;
  int running_ = 0, max_running_ = 1;
  std::map<std::string, std::string> problems_;  // by task id
  std::string device_name_;
};

// Judges each distinct (task content, source) pair once, over any Evaluator: a second
// request for the same pair, even one arriving while the first is running, gets the first
// result. Harness failures are not kept, so they can be retried. Thread-safe.
class SharingEvaluator final : public Evaluator {
 public:
  // `inner` is borrowed and must outlive this object.
  explicit SharingEvaluator(Evaluator* inner) : inner_(inner) {}

  Result<std::string> problem(const tasks::TaskInfo& task) override { return inner_->problem(task); }
  Result<engine::EvalResult> evaluate(const tasks::TaskInfo& task, const std::string& source) override;
  std::string backend() const override { return inner_->backend(); }
  std::string device_name() const override { return inner_->device_name(); }

 private:
  Evaluator* inner_;
  std::mutex mu_;
  std::map<std::string, std::shared_future<Result<engine::EvalResult>>> results_;  // by (task, source) hash
};

}  // namespace kevin::env
