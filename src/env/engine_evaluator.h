// engine_evaluator.h — the real Evaluator: the reference provider, the compile driver and
// one judge per GPU wired together under a DevicePool, with the engine's settings
// (EngineOptions) that every command shares.
#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/mutex.h"
#include "engine/judge/judge.h"
#include "env/device_pool.h"
#include "env/evaluator.h"
#include "tasks/reference_provider.h"
#include "tasks/suite.h"

namespace kevin::env {

struct EngineOptions {
  engine::Backend backend = engine::Backend::kCuda;
  // CUDA ordinals to evaluate on; empty: every visible GPU. They must be one GPU model (the
  // baseline times and speedups are per model). Ignored by the CPU backend.
  std::vector<int> devices;
  std::filesystem::path cache_dir;    // reference data, baselines, builds
  std::filesystem::path share_dir;    // kevin_abi.h and reference_worker.py
  std::filesystem::path runner_path;  // the kevin-runner executable
  std::string python;                 // interpreter override ("" = discover)
  int seeds = 5;                      // K
  bool fresh_seeds = false;
  // Reference data and baselines (tasks::ProviderOptions has the defaults' reasons).
  uint64_t timing_bytes_budget = tasks::kDefaultTimingBytesBudget;  // bounds the T timing sets
  uint64_t max_reference_bytes = uint64_t{32} << 30;                // cap on <cache>/reference
  std::chrono::seconds baseline_ttl{6 * 3600};                      // baselines re-timed after
  std::string tolerance = "default";
  // Sandboxes the candidate runner and the compiler (kevin-sandbox beside runner_path); off:
  // debugging only.
  bool sandbox = true;
  // A PID namespace per CPU runner too (CUDA runners stay in the host's: see evaluator.cpp).
  bool pid_namespace = true;
  bool allow_degenerate_tasks =
      false;  // evaluate tasks a trivial output passes (refused otherwise)
  uint64_t build_cache_max_bytes = uint64_t{8}
                                   << 30;  // cap on <cache>/builds (unused entries evicted, LRU)
  double call_timeout_s = 20;
  double timing_budget_ms = 2000;
  int max_timed_calls = 100;
  // Above 0: a candidate's timed calls stop once its median's 95 % interval is within ± this
  // fraction (engine::EvalConfig::timing_ci). 0: every affordable call runs.
  double timing_ci = 0;
  // What speedups are measured against: eager PyTorch, or torch.compile's code with eager's
  // reported beside (tasks::ProviderOptions::baseline; needs PyTorch 2.0 or later).
  engine::BaselineKind baseline = engine::BaselineKind::kEager;
  int jobs = 0;  // concurrent evaluations over all GPUs; 0 = CPU cores
  // Python reference workers at once: different tasks' data are prepared in parallel.
  int reference_workers = 4;
  // Candidate formats judged (docs/kernelbench.md): "kevin" (the C ABI only), "kernelbench"
  // (ModelNew answers only), "auto" (each source by its text: engine::detect_format). Anything
  // but "kevin" probes the Python with PyTorch for its extension toolchain when created.
  std::string format = "kevin";
  // The run's interrupt (Ctrl-C): once it reads true, reference data and baselines are no
  // longer prepared and a preparation in progress is abandoned, so evaluations that need them
  // fail with kCancelled (tasks::ProviderOptions::cancel). Borrowed; null: never.
  const std::atomic<bool>* cancel = nullptr;
};

// The engine behind the Evaluator interface, over every chosen GPU: at most `jobs`
// evaluations run at a time, each on the GPU with the fewest running (DevicePool), and
// timing holds its GPU exclusively (DeviceGate per GPU). Reference data and baseline
// times come from the first GPU. Thread-safe.
class EngineEvaluator final : public Evaluator {
 public:
  // Errors: kFailedPrecondition (CUDA backend without a GPU), kInvalidArgument (bad
  // tolerance, a device that is not there or listed twice, GPUs of different models),
  // kNotFound (runner missing).
  static Result<std::unique_ptr<EngineEvaluator>> create(const EngineOptions& options);

  Result<std::string> problem(const tasks::TaskInfo& task) override;
  Result<engine::EvalResult> evaluate(const tasks::TaskInfo& task,
                                      const std::string& source) override;
  // KernelBench answers need judges_kernelbench() (kFailedPrecondition otherwise).
  Result<engine::EvalResult> evaluate_as(const tasks::TaskInfo& task, const std::string& source,
                                         engine::CandidateFormat format) override;
  std::string backend() const override { return engine::backend_name(options_.backend); }
  std::string device_name() const override;
  DeviceGate* device_gate(int device) override;
  engine::CandidateFormat answer_format() const override {
    return options_.format == "kernelbench" ? engine::CandidateFormat::kKernelBench
                                            : engine::CandidateFormat::kKevin;
  }
  bool judges_kernelbench() const override { return extension_compiler_ != nullptr; }

  // Reference data of the task file at `task` (prepared on first use, then cached on disk
  // by the provider under its seed-set policy).
  Result<engine::ReferenceSet> reference(const std::filesystem::path& task);
  // Judges `source` against `ref` without sharing or caching (kevin eval's path), in the
  // format given or (nullopt) the one format_of picks.
  Result<engine::EvalResult> judge(const std::string& source, const engine::ReferenceSet& ref,
                                   std::optional<engine::CandidateFormat> format = std::nullopt);
  // Evaluations currently running (for progress displays).
  int in_flight() const;
  // How large one call of the task file at `task` is on this backend: the bytes of its
  // tensors (forward arguments, parameters, buffers) and outputs, and whether the task shrinks
  // itself for the CPU (KEVIN_CPU_SIZES). Errors as problem().
  struct CallSize {
    uint64_t input_bytes = 0, output_bytes = 0;
    bool reduced_for_cpu = false;
  };
  Result<CallSize> call_size(const std::filesystem::path& task);
  // The CUDA ordinals evaluations run on ({} on the CPU backend).
  std::vector<int> devices() const;

 private:
  // One GPU (or the CPU): its judge, pinned to it, and the gate that makes timing exclusive.
  struct Lane {
    int device = 0;
    DeviceGate gate;
    std::unique_ptr<engine::Judge> judge;
  };

  explicit EngineEvaluator(EngineOptions options) : options_(std::move(options)) {}
  Status choose_devices();
  // The gate of the lane on `device` (on the CPU backend too, unlike device_gate()); null
  // when no lane runs there. The provider times baselines under it.
  DeviceGate* lane_gate(int device);

  // The torch-extension compile driver and the judges' KernelBench settings (format != kevin).
  Result<engine::KernelBenchSupport> kernelbench_support();
  // The format `source` is judged in under options_.format.
  engine::CandidateFormat format_of(const std::string& source) const;

  EngineOptions options_;
  std::unique_ptr<tasks::ReferenceProvider> provider_;
  std::unique_ptr<engine::CompileDriver> compiler_;
  std::unique_ptr<engine::CompileDriver> extension_compiler_;  // KernelBench answers' builds
  std::vector<std::unique_ptr<Lane>> lanes_;
  std::unique_ptr<DevicePool> pool_;

  std::string device_name_;  // set while creating, read-only after

  mutable Mutex mu_;
  std::map<std::string, std::string> problems_ GUARDED_BY(mu_);  // by task id
};

}  // namespace kevin::env
