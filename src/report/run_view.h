// run_view.h — the parts of a run's HTML report that read the run's own files beyond the
// metrics: the run's settings as a person asks for them (model, endpoint, device, m×n,
// sampling, tasks, when) and the per-trajectory view (turn → verdict, speedup, feedback, code).
#pragma once

#include <filesystem>
#include <string>

namespace kevin::report {

// The two sections, from one read of trajectories.jsonl.
struct RunView {
  // The "Run" table from RUN_DIR/config.json and the records' finish times: model, endpoint,
  // policy, backend and devices, allocations, sampling settings, tasks, start, last turn and
  // duration, kevin version. Fields the files lack show "—"; an unreadable or malformed
  // config.json gives a note saying why instead.
  std::string settings;
  // Per allocation and task, collapsed: each trajectory's turns with verdict and speedup, and
  // under each, across the table, the feedback the model saw and the (collapsed) kernel. Kernels
  // are embedded up to `max_code_bytes` in all (later ones say where to find them), so a large run
  // still gives a page a browser opens. An unreadable records file gives a note.
  std::string trajectories;
};

// Reads config.json and trajectories.jsonl (one line at a time, keeping only what the view
// shows). Never fails.
RunView render_run_view(const std::filesystem::path& run_dir,
                        size_t max_code_bytes = size_t{8} << 20);

}  // namespace kevin::report
