// engine_flags.cpp — the engine's shared flags, their settings JSON and the local engine's
// options read back from resolved settings.
#include "cli/engine_flags.h"

#include <CLI/CLI.hpp>

namespace kevin::cli {

Json EngineFlags::settings() const {
  return {{"backend", backend},
          {"devices", devices},
          {"seeds", seeds},
          {"tolerance", tolerance},
          {"jobs", jobs},
          {"reference_workers", reference_workers},
          {"python", python},
          {"cache_dir", cache},
          {"sandbox", !no_sandbox},
          {"call_timeout_s", call_timeout_s},
          {"max_timed_calls", max_timed_calls},
          {"timing_ci", timing_ci},
          {"baseline", baseline},
          {"allow_degenerate_tasks", allow_degenerate},
          {"format", format}};
}

Json QueueFlags::with_queue(Json settings) const {
  settings["queue"] = queue;
  settings["queue_model"] = model;
  settings["queue_worker_wait_s"] = worker_wait_s;
  return settings;
}

void add_queue_options(CLI::App* command, QueueFlags* flags) {
  command->add_option("--queue", flags->queue,
                      "evaluate on `kevin worker`s behind this Redis queue: "
                      "redis://[:PASSWORD@]HOST[:PORT][/PREFIX]; --backend auto follows the live "
                      "workers (cpu when all are on the CPU)");
  command->add_option(
      "--queue-model", flags->model,
      "with --queue: only workers of this GPU model, e.g. \"NVIDIA H200\" (default: any)");
  command
      ->add_option("--queue-worker-wait", flags->worker_wait_s,
                   "with --queue: seconds a job waits for a live worker that takes it, then "
                   "fails naming the live workers")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
}

void add_engine_flags(CLI::App* command, EngineFlags* f, const std::string& format_help) {
  command->add_option("--backend", f->backend, "cuda, cpu or auto (cuda when a GPU is present)")
      ->check(CLI::IsMember({"auto", "cuda", "cpu"}))
      ->capture_default_str();
  add_device_options(command, &f->devices);
  command->add_option("--jobs", f->jobs, "evaluations at once (default 0: one per CPU core)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  command
      ->add_option("--reference-workers", f->reference_workers,
                   "Python reference workers at once: different tasks' reference data are "
                   "prepared in parallel")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  command->add_option("--seeds", f->seeds, "secret input sets checked per evaluation (K)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  command
      ->add_option("--tolerance", f->tolerance, "default, kevin (1e-2, the paper's) or ATOL,RTOL")
      ->capture_default_str();
  command->add_option("--timeout", f->call_timeout_s, "seconds one correctness call may take")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  command->add_option("--timed-calls", f->max_timed_calls, "most timed calls per candidate")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  command
      ->add_option("--timing-ci", f->timing_ci,
                   "stop timing a candidate once its median's 95% interval is within +- this "
                   "fraction (0.02: +-2%; 0: every call the budget affords)")
      ->check(CLI::Range(0.0, 0.5))
      ->capture_default_str();
  command
      ->add_option("--baseline", f->baseline,
                   "what speedups are measured against: eager (PyTorch as written) or compile "
                   "(torch.compile's code, timed the same way, with eager's reported beside; "
                   "PyTorch 2.0 or later)")
      ->check(CLI::IsMember({"eager", "compile"}))
      ->capture_default_str();
  command->add_option("--format", f->format, format_help)
      ->check(CLI::IsMember({"kevin", "kernelbench", "auto"}))
      ->capture_default_str();
  command->add_option("--python", f->python,
                      "Python interpreter with PyTorch for the reference worker (or KEVIN_PYTHON)");
  command->add_option("--cache-dir", f->cache,
                      "cache folder (default KEVIN_CACHE_DIR or ~/.cache/kevin)");
  command->add_flag("--no-sandbox", f->no_sandbox,
                    "compile and run candidates without namespaces, seccomp, rlimits or the "
                    "compiler sandbox (debugging only)");
  command->add_flag("--allow-degenerate-tasks", f->allow_degenerate,
                    "judge tasks whose reference data an all-zero, constant or input-copy output "
                    "passes (refused otherwise; queue producers and workers must agree)");
}

}  // namespace kevin::cli
