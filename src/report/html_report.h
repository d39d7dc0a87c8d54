// html_report.h — one self-contained HTML page for a run: the run's configuration, per
// allocation the overall tables, SVG scaling plots and a per-task table with links to the best
// kernels. Inline CSS and SVG only: no scripts, no external resources.
#pragma once

#include <filesystem>
#include <string>

#include "core/status.h"
#include "report/metrics.h"

namespace kevin::report {

// The page for `metrics` of the run in `run_dir`, to be saved as `out_file` (links to the best
// kernels, RUN_DIR/best/<task>.cu or .cpp when present, are relative to out_file's folder).
// Reads RUN_DIR/config.json when present and shows its top-level scalar fields; an unreadable
// or malformed config is noted on the page, not an error. Every string from the run is
// HTML-escaped.
std::string render_html_report(const std::filesystem::path& run_dir, const Metrics& metrics,
                               const std::filesystem::path& out_file);

// Renders the page and writes it to `out_file` atomically (creating its folder). Fails only
// when the file cannot be written (kIoError).
Status write_html_report(const std::filesystem::path& run_dir, const Metrics& metrics,
                         const std::filesystem::path& out_file);

}  // namespace kevin::report
