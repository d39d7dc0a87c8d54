// engine_flags.h — the engine's flags, declared once for every command that judges kernels
// (eval, run, serve, worker): one name, help text, range and default per setting, turned into
// the engine settings JSON that resolve_engine_json completes and make_evaluator builds from.
#pragma once

#include <string>

#include "cli/run_setup.h"
#include "core/json.h"

namespace kevin::cli {

// What the flags hold; the defaults are the engine's (resolve_engine_json fills the same).
struct EngineFlags {
  std::string backend = "auto", devices = "all", tolerance = "default", python, cache;
  std::string format = "kevin";  // a command may start from another default (eval, worker: auto)
  std::string baseline = "eager";
  int seeds = 5, jobs = 0, max_timed_calls = 100, reference_workers = 4;
  double call_timeout_s = 20, timing_ci = 0;
  bool no_sandbox = false, allow_degenerate = false;

  // The settings these flags give (keys of resolve_engine_json), without any queue.
  Json settings() const;
};

// Where a producer (eval, run, serve) sends its evaluations; an empty queue: this machine's
// engine.
struct QueueFlags {
  std::string queue, model;
  double worker_wait_s = kQueueWorkerWaitS;
  // `settings` with the queue keys added.
  Json with_queue(Json settings) const;
};

// Registers --queue URL (evaluate on `kevin worker`s behind a Redis queue instead of this
// machine's engine), --queue-model NAME (only workers of that GPU model) and
// --queue-worker-wait SECONDS (how long a job waits for a live worker that takes it) on
// `command`. `flags` is borrowed and outlives the command.
void add_queue_options(CLI::App* command, QueueFlags* flags);

// Registers on `command`: --backend, --devices/--device, --jobs, --reference-workers, --seeds,
// --tolerance,
// --timeout, --timed-calls, --timing-ci, --baseline, --format (with `format_help`: what the format
// means to this command), --python, --cache-dir, --no-sandbox and --allow-degenerate-tasks, each
// showing its default in --help. `flags` is borrowed and outlives the command.
void add_engine_flags(CLI::App* command, EngineFlags* flags, const std::string& format_help);

}  // namespace kevin::cli
