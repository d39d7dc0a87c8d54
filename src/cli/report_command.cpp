// report_command.cpp — `kevin report DIR`: a run's metrics, or a training log's summary, as
// tables (or JSON) on stdout and a self-contained HTML report (DIR/report.html, or --out).
#include <CLI/CLI.hpp>

#include <functional>
#include <ostream>
#include <system_error>

#include "cli/app.h"
#include "core/file.h"
#include "report/html_report.h"
#include "report/metrics.h"
#include "report/tables.h"
#include "report/train_report.h"
#include "rollout/records.h"
#include "rollout/run_store.h"

namespace kevin::cli {
namespace fs = std::filesystem;

namespace {

constexpr const char* kRecords = "trajectories.jsonl";  // written by `kevin run`
constexpr const char* kTrainLog = "train_log.jsonl";    // written by `kevin train`

struct ReportArgs {
  std::string dir, out;  // DIR and --out
  bool json = false;
};

// Writes the page through `write` to --out or DIR/report.html and says where: on stdout, or on
// stderr with --json (stdout then carries only the JSON document). Failure → exit 1.
int write_report(const ReportArgs& a, const std::function<Status(const fs::path&)>& write,
                 std::ostream& out, std::ostream& err) {
  const fs::path html = a.out.empty() ? fs::path(a.dir) / "report.html" : fs::path(a.out);
  const Status written = write(html);
  if (!written.is_ok()) {
    err << "kevin report: " << written.message() << "\n";
    return kExitFailure;
  }
  (a.json ? err : out) << "wrote " << html.string() << "\n";
  return kExitOk;
}

// A missing file is a wrong argument (exit 2); malformed content, a failed job (exit 1).
int read_failure(const Status& status, std::ostream& err) {
  err << "kevin report: " << status.message() << "\n";
  return status.code() == StatusCode::kNotFound ? kExitUsage : kExitFailure;
}

int run_report(const ReportArgs& a, std::ostream& out, std::ostream& err) {
  const fs::path run_dir = a.dir;
  auto metrics = report::metrics_of_run(run_dir);
  if (!metrics.is_ok()) return read_failure(metrics.status(), err);
  out << (a.json ? dump_json(report::to_json(*metrics), 1) + "\n"
                 : report::render_tables(*metrics));
  return write_report(
      a, [&](const fs::path& html) { return report::write_html_report(run_dir, *metrics, html); },
      out, err);
}

int train_report(const ReportArgs& a, std::ostream& out, std::ostream& err) {
  const fs::path train_dir = a.dir;
  auto lines = report::read_train_log(train_dir / kTrainLog);
  if (!lines.is_ok()) return read_failure(lines.status(), err);
  out << (a.json ? dump_json(report::to_json(report::summarize_train_log(*lines)), 1) + "\n"
                 : report::render_train_tables(*lines));
  return write_report(
      a,
      [&](const fs::path& html) {
        return report::write_train_html_report(train_dir, *lines, html);
      },
      out, err);
}

// A run stopped before it wrote its outputs (a second Ctrl-C, a kill) keeps every finished
// turn in run.db: writes trajectories.jsonl, best/ and metrics.json from it as the run would
// have, and returns how many turns they hold. Errors: the config or database cannot be read.
Result<size_t> rebuild_run_outputs(const fs::path& dir) {
  KEVIN_ASSIGN_OR_RETURN(std::string text, read_file(dir / "config.json"));
  KEVIN_ASSIGN_OR_RETURN(Json config, parse_json(text));
  if (!config.is_object()) return invalid_argument("config.json is not a JSON object");
  KEVIN_ASSIGN_OR_RETURN(auto rollout_config, rollout::rollout_config_from_json(
                                                  config.value("rollout", Json::object())));
  KEVIN_ASSIGN_OR_RETURN(auto store, rollout::RunStore::open(dir / "run.db"));
  KEVIN_ASSIGN_OR_RETURN(auto scored, rollout::scored_turns(store, rollout_config));
  const Json engine = config.value("engine", Json::object());
  const std::string ext =
      engine.is_object() && engine.value("backend", "") == "cuda" ? "cu" : "cpp";
  KEVIN_RETURN_IF_ERROR(rollout::write_run_outputs(scored, dir, ext));
  if (!scored.empty()) KEVIN_RETURN_IF_ERROR(report::write_metrics_file(dir));
  return scored.size();
}

// A run folder (trajectories.jsonl) gets the run report; a training folder (train_log.jsonl and
// no trajectories.jsonl), the training report. A run folder whose run stopped before writing
// its records has them rebuilt from run.db first.
int report(const ReportArgs& a, std::ostream& out, std::ostream& err) {
  const fs::path dir = a.dir;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    err << "kevin report: no run folder " << dir.string() << "\n";
    return kExitUsage;
  }
  bool has_records = fs::exists(dir / kRecords, ec);
  const bool has_train_log = fs::exists(dir / kTrainLog, ec);
  if (!has_records && fs::exists(dir / "run.db", ec)) {
    auto rebuilt = rebuild_run_outputs(dir);
    if (!rebuilt.is_ok()) {
      err << "kevin report: " << dir.string() << " has run.db but no " << kRecords
          << ", and rebuilding it failed: " << rebuilt.status().message() << "\n";
      return kExitFailure;
    }
    err << "kevin report: the run in " << dir.string() << " stopped before writing its records; "
        << *rebuilt << " finished turns read from run.db (resume with: kevin run --resume "
        << dir.string() << ")\n";
    has_records = true;
  }
  if (!has_records && !has_train_log) {
    err << "kevin report: " << dir.string() << " holds neither " << kRecords << " nor " << kTrainLog
        << "\n";
    return kExitUsage;
  }
  return has_records ? run_report(a, out, err) : train_report(a, out, err);
}

}  // namespace

void add_report_command(CLI::App& app, Action& action) {
  auto args = std::make_shared<ReportArgs>();
  CLI::App* sub =
      app.add_subcommand("report", "tables and an HTML report of a run or a training folder");
  sub->footer(
      "Examples:\n"
      "  kevin report runs/20261204-101500\n"
      "  kevin report runs/20261204-101500 --json > metrics.json\n"
      "  kevin report runs/train-smoke --out smoke.html   (a training folder)");
  sub->add_option(
         "dir", args->dir,
         "run folder (holds trajectories.jsonl) or training folder (holds train_log.jsonl and no "
         "trajectories.jsonl)")
      ->required();
  sub->add_option("--out", args->out, "HTML file to write (default DIR/report.html)");
  sub->add_flag("--json", args->json,
                "print the metrics (or the training summary) as JSON instead of tables");
  sub->callback([args, &action] {
    action = [args](std::ostream& out, std::ostream& err) { return report(*args, out, err); };
  });
}

}  // namespace kevin::cli
