// engine_evaluator.cpp — EngineEvaluator: choosing the GPUs, one judge per lane, KernelBench
// support where PyTorch's toolchain is found, and reference data by task.
#include "env/engine_evaluator.h"

#include <algorithm>
#include <map>
#include <set>

#include "core/file.h"
#include "core/log.h"
#include "core/parallel.h"
#include "engine/run/runner_session.h"
#include "sys/cuda_probe.h"
#include "tasks/kernelbench_tools.h"
#include "tasks/problem.h"

namespace kevin::env {
namespace fs = std::filesystem;

Status EngineEvaluator::choose_devices() {
  if (options_.backend != engine::Backend::kCuda) {
    options_.devices = {0};  // the CPU: one lane, its ordinal unused
    device_name_ = "CPU";
    return Status::ok();
  }
  std::string why;
  const int n = sys::cuda_device_count(&why);
  if (n == 0)
    return failed_precondition("the CUDA backend needs a GPU: " + why + " (use --backend cpu)");
  if (options_.devices.empty()) {
    for (int d = 0; d < n; ++d) options_.devices.push_back(d);
  }
  std::set<int> seen;
  for (int d : options_.devices) {
    if (d < 0 || d >= n)
      return invalid_argument("device " + std::to_string(d) + ": only " + std::to_string(n) +
                              " CUDA devices");
    if (!seen.insert(d).second)
      return invalid_argument("device " + std::to_string(d) + " is listed twice");
    const std::string name = sys::cuda_device_name(d);
    if (device_name_.empty()) device_name_ = name;
    if (name != device_name_) {
      return invalid_argument(
          "devices " + std::to_string(options_.devices.front()) + " (" + device_name_ + ") and " +
          std::to_string(d) + " (" + name +
          ") are different GPU models; choose GPUs of one model with --devices");
    }
  }
  return Status::ok();
}

Result<std::unique_ptr<EngineEvaluator>> EngineEvaluator::create(const EngineOptions& options) {
  const engine::Leftovers left = engine::clean_up_after_dead_judges();
  if (left.folders + left.runners > 0) {
    KEVIN_LOG(info) << "cleaned up after an earlier kevin that did not exit cleanly: "
                    << left.runners << " runner processes, " << left.folders << " scratch folders";
  }
  std::unique_ptr<EngineEvaluator> ev(new EngineEvaluator(options));
  KEVIN_RETURN_IF_ERROR(ev->choose_devices());
  KEVIN_ASSIGN_OR_RETURN(auto tolerance, engine::ToleranceProfile::parse(options.tolerance));
  if (!fs::exists(options.runner_path))
    return not_found("kevin-runner not found: " + options.runner_path.string());

  tasks::ProviderOptions p;
  p.cache_dir = options.cache_dir;
  p.worker.script = options.share_dir / "reference_worker.py";
  if (!options.python.empty()) p.worker.python_override = options.python;
  p.num_sets = options.seeds;
  p.workers = options.reference_workers;
  p.seed_ttl = options.fresh_seeds ? std::chrono::seconds(0) : std::chrono::seconds(3600);
  p.timing_budget_ms = options.timing_budget_ms;
  p.max_calls = options.max_timed_calls;
  p.timing_bytes_budget = options.timing_bytes_budget;
  p.max_reference_bytes = options.max_reference_bytes;
  p.baseline_ttl = options.baseline_ttl;
  p.baseline = options.baseline;
  p.cancel = options.cancel;
  // Looked up at each use: the lanes are made below. The provider dies with `ev`.
  p.timing_gate = [self = ev.get()](int device) { return self->lane_gate(device); };
  ev->provider_ = std::make_unique<tasks::ReferenceProvider>(p);

  engine::CompilerConfig c;
  c.backend = options.backend;
  c.cache_dir = options.cache_dir;
  c.abi_include_dir = options.share_dir;
  c.sandbox = options.sandbox;
  c.sandbox_path = options.runner_path.parent_path() / "kevin-sandbox";
  c.max_cache_bytes = options.build_cache_max_bytes;
  KEVIN_ASSIGN_OR_RETURN(auto driver, engine::CompileDriver::create(c));
  ev->compiler_ = std::make_unique<engine::CompileDriver>(std::move(driver));

  engine::EvalConfig e;
  if (options.format != "kevin") {
    auto kb = ev->kernelbench_support();
    if (kb.is_ok()) {
      e.kernelbench = std::move(kb).value();
    } else if (options.format == "kernelbench" ||
               kb.status().code() == StatusCode::kInvalidArgument) {
      return kb.status();
    } else {
      // auto: kevin's own candidates do not need PyTorch's toolchain; a ModelNew answer is then
      // an error naming this.
      KEVIN_LOG(warn) << "KernelBench answers cannot be judged here: " << kb.status().message();
    }
  }
  e.backend = options.backend;
  e.tolerance = tolerance;
  e.runner_path = options.runner_path;
  e.sandbox = options.sandbox;
  // NVML names a GPU process by its pid inside its own PID namespace, so CUDA runners in
  // namespaces of their own could not be told apart by the GPU-memory bound; they keep the
  // host's (the allowlist and the empty root already keep them from other processes).
  e.pid_namespace = options.pid_namespace && options.backend == engine::Backend::kCpu;
  e.allow_degenerate_tasks = options.allow_degenerate_tasks;
  e.max_timed_calls = options.max_timed_calls;
  e.timing_ci = options.timing_ci;
  e.timing_budget_ms = options.timing_budget_ms;
  e.call_timeout = std::chrono::milliseconds(static_cast<int64_t>(options.call_timeout_s * 1000));
  for (int d : ev->options_.devices) {
    auto lane = std::make_unique<Lane>();
    lane->device = d;
    e.device = d;
    e.gate = &lane->gate;
    lane->judge = std::make_unique<engine::Judge>(*ev->compiler_, e);
    ev->lanes_.push_back(std::move(lane));
  }
  const int jobs = options.jobs > 0 ? options.jobs : static_cast<int>(hardware_threads());
  ev->pool_ = std::make_unique<DevicePool>(ev->lanes_.size(), jobs);
  return ev;
}

Result<engine::KernelBenchSupport> EngineEvaluator::kernelbench_support() {
  if (options_.format != "kernelbench" && options_.format != "auto") {
    return invalid_argument("unknown candidate format '" + options_.format +
                            "' (kevin, kernelbench or auto)");
  }
  KEVIN_ASSIGN_OR_RETURN(
      tasks::TorchInstallation torch,
      tasks::probe_torch(options_.python.empty() ? std::nullopt : std::optional(options_.python)));
  if (options_.backend == engine::Backend::kCuda && !torch.toolchain.cuda) {
    return failed_precondition(torch.python + " has a PyTorch without CUDA (" +
                               torch.toolchain.torch_version +
                               "); KernelBench answers on the GPU need one with it");
  }
  engine::CompilerConfig c = compiler_->config();
  c.torch = torch.toolchain;
  KEVIN_ASSIGN_OR_RETURN(auto driver, engine::CompileDriver::create(c));
  extension_compiler_ = std::make_unique<engine::CompileDriver>(std::move(driver));
  engine::KernelBenchSupport kb;
  kb.build =
      [driver = extension_compiler_.get()](const std::vector<engine::ExtensionUnits>& extensions) {
        return driver->build_extensions(extensions);
      };
  kb.python = torch.python;
  kb.runner_script = options_.share_dir / "kernelbench_runner.py";
  kb.support_library = options_.runner_path.parent_path() / "libkevin-runner-support.so";
  // Built where kevin found libtorch; the file beside it names that libtorch's version.
  if (const fs::path log = options_.runner_path.parent_path() / "libkevin-op-log.so";
      fs::exists(log)) {
    if (auto version = read_file(fs::path(log).replace_extension(".torch")); version.is_ok()) {
      kb.op_log_library = log;
      kb.op_log_torch_version = version->substr(0, version->find_first_of(" \r\n"));
    }
  }
  for (const auto& needed : {kb.runner_script, kb.support_library}) {
    if (!fs::exists(needed))
      return not_found("KernelBench answers need " + needed.string() + " (build kevin fully)");
  }
  kb.check = [python = torch.python,
              checker = options_.share_dir / "kernelbench_check.py"](std::string_view answer) {
    return tasks::check_kernelbench_answer(python, checker, answer);
  };
  KEVIN_LOG(info) << "KernelBench answers: " << torch.python << " (torch "
                  << torch.toolchain.torch_version << ")";
  return kb;
}

engine::CandidateFormat EngineEvaluator::format_of(const std::string& source) const {
  if (options_.format == "kernelbench") return engine::CandidateFormat::kKernelBench;
  if (options_.format == "auto") return engine::detect_format(source);
  return engine::CandidateFormat::kKevin;
}

std::string EngineEvaluator::device_name() const { return device_name_; }

DeviceGate* EngineEvaluator::device_gate(int device) {
  return options_.backend == engine::Backend::kCuda ? lane_gate(device) : nullptr;
}

DeviceGate* EngineEvaluator::lane_gate(int device) {
  for (auto& lane : lanes_) {
    if (lane->device == device) return &lane->gate;
  }
  return nullptr;
}

Result<std::string> EngineEvaluator::problem(const tasks::TaskInfo& task) {
  {
    MutexLock lock(mu_);
    if (auto it = problems_.find(task.id); it != problems_.end()) return it->second;
  }
  KEVIN_ASSIGN_OR_RETURN(std::string source, read_file(task.path));
  KEVIN_ASSIGN_OR_RETURN(Json reply, provider_->describe(task.path, backend()));
  KEVIN_ASSIGN_OR_RETURN(tasks::ArgumentList args, tasks::argument_list_from_json(reply));
  std::string text = tasks::problem_statement(task, source, args, backend(), answer_format());
  MutexLock lock(mu_);
  problems_[task.id] = text;
  return text;
}

namespace {

// Bytes of the tensors a describe reply lists under `key` (dtype names as torch prints them).
Result<uint64_t> tensor_bytes(const Json& reply, const char* key) {
  static const std::map<std::string, uint64_t> kElementBytes = {
      {"float64", 8},  {"int64", 8}, {"complex64", 8}, {"float32", 4}, {"int32", 4}, {"float16", 2},
      {"bfloat16", 2}, {"int16", 2}, {"uint8", 1},     {"int8", 1},    {"bool", 1}};
  if (!reply.contains(key) || !reply[key].is_array())
    return invalid_argument(std::string("describe: no ") + key);
  uint64_t total = 0;
  for (const Json& spec : reply[key]) {
    KEVIN_ASSIGN_OR_RETURN(std::string dtype, json_get<std::string>(spec, "dtype"));
    KEVIN_ASSIGN_OR_RETURN(std::vector<int64_t> shape,
                           json_get<std::vector<int64_t>>(spec, "shape"));
    uint64_t n = kElementBytes.count(dtype) ? kElementBytes.at(dtype) : 4;
    for (int64_t d : shape) n *= static_cast<uint64_t>(std::max<int64_t>(d, 0));
    total += n;
  }
  return total;
}

}  // namespace

Result<EngineEvaluator::CallSize> EngineEvaluator::call_size(const fs::path& task) {
  // Data already prepared for the task says it all: no reference worker (an interpreter
  // importing torch, seconds) is started just to ask.
  if (auto ref = provider_->current(task, backend(), options_.devices.front());
      ref && ref->has_cpu_sizes) {
    CallSize size;
    for (const auto& t : ref->input_tensors()) size.input_bytes += t.bytes();
    for (const auto& t : ref->outputs) size.output_bytes += t.bytes();
    size.reduced_for_cpu = *ref->has_cpu_sizes;
    return size;
  }
  KEVIN_ASSIGN_OR_RETURN(Json reply, provider_->describe(task, backend()));
  CallSize size;
  KEVIN_ASSIGN_OR_RETURN(size.input_bytes, tensor_bytes(reply, "inputs"));
  KEVIN_ASSIGN_OR_RETURN(size.output_bytes, tensor_bytes(reply, "outputs"));
  size.reduced_for_cpu = reply.value("has_cpu_sizes", false);
  return size;
}

Result<engine::ReferenceSet> EngineEvaluator::reference(const fs::path& task) {
  return provider_->get(task, backend(), options_.devices.front());
}

Result<engine::EvalResult> EngineEvaluator::judge(const std::string& source,
                                                  const engine::ReferenceSet& ref,
                                                  std::optional<engine::CandidateFormat> format) {
  DevicePool::Lease lease(*pool_);
  const Lane& lane = *lanes_[lease.lane()];
  engine::EvalHooks hooks;
  if (!ref.task_file.empty()) {
    // The judge holds no gate when it asks; `hold` takes this lane's, as the provider needs it.
    hooks.retime_baseline = [this, &ref, device = lane.device](const TwoStepHold& hold) {
      return provider_->retime_baseline(ref.task_file, backend(), device, hold);
    };
  }
  return lane.judge->evaluate(source, ref, hooks, format.value_or(format_of(source)));
}

Result<engine::EvalResult> EngineEvaluator::evaluate(const tasks::TaskInfo& task,
                                                     const std::string& source) {
  KEVIN_ASSIGN_OR_RETURN(engine::ReferenceSet ref, reference(task.path));
  return judge(source, ref);
}

Result<engine::EvalResult> EngineEvaluator::evaluate_as(const tasks::TaskInfo& task,
                                                        const std::string& source,
                                                        engine::CandidateFormat format) {
  if (format == engine::CandidateFormat::kKernelBench && !judges_kernelbench()) {
    return failed_precondition(
        "this engine does not judge KernelBench answers (it needs --format auto or kernelbench "
        "and a Python with PyTorch's extension headers)");
  }
  KEVIN_ASSIGN_OR_RETURN(engine::ReferenceSet ref, reference(task.path));
  return judge(source, ref, format);
}

int EngineEvaluator::in_flight() const { return pool_->in_flight(); }

std::vector<int> EngineEvaluator::devices() const {
  return options_.backend == engine::Backend::kCuda ? options_.devices : std::vector<int>{};
}

}  // namespace kevin::env
