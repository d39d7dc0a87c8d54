// report_command.cpp — `kevin report RUN_DIR`: a run's metrics as tables (or JSON) on stdout
// and a self-contained HTML report (RUN_DIR/report.html, or --out).
#include <CLI/CLI.hpp>

#include <ostream>
#include <system_error>

#include "cli/app.h"
#include "report/html_report.h"
#include "report/metrics.h"
#include "report/tables.h"

namespace kevin::cli {
namespace fs = std::filesystem;

namespace {

struct ReportArgs {
  std::string run_dir, out;
  bool json = false;
};

int run_report(const ReportArgs& a, std::ostream& out, std::ostream& err) {
  const fs::path run_dir = a.run_dir;
  std::error_code ec;
  if (!fs::is_directory(run_dir, ec)) {
    err << "kevin report: no run folder " << run_dir.string() << "\n";
    return kExitUsage;
  }
  auto metrics = report::metrics_of_run(run_dir);
  if (!metrics.is_ok()) {
    err << "kevin report: " << metrics.status().message() << "\n";
    // A missing trajectories.jsonl is a wrong argument; a malformed one, a failed job.
    return metrics.status().code() == StatusCode::kNotFound ? kExitUsage : kExitFailure;
  }
  if (a.json) {
    out << dump_json(report::to_json(*metrics), 1) << "\n";
  } else {
    out << report::render_tables(*metrics);
  }
  const fs::path html = a.out.empty() ? run_dir / "report.html" : fs::path(a.out);
  const Status written = report::write_html_report(run_dir, *metrics, html);
  if (!written.is_ok()) {
    err << "kevin report: " << written.message() << "\n";
    return kExitFailure;
  }
  // With --json, stdout carries only the JSON document.
  (a.json ? err : out) << "wrote " << html.string() << "\n";
  return kExitOk;
}

}  // namespace

void add_report_command(CLI::App& app, Action& action) {
  auto args = std::make_shared<ReportArgs>();
  CLI::App* sub = app.add_subcommand("report", "tables and an HTML report of a run");
  sub->add_option("run_dir", args->run_dir, "run folder (holds trajectories.jsonl)")->required();
  sub->add_option("--out", args->out, "HTML file to write (default RUN_DIR/report.html)");
  sub->add_flag("--json", args->json, "print the metrics as JSON instead of tables");
  sub->callback([args, &action] {
    action = [args](std::ostream& out, std::ostream& err) { return run_report(*args, out, err); };
  });
}

}  // namespace kevin::cli
