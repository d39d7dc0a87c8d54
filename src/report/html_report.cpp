// html_report.cpp — the HTML page of a run: sections are built as strings from Metrics and the
// run folder on the shared shell (html_page.h); every string from the records is escaped.
#include "report/html_report.h"

#include <algorithm>
#include <optional>
#include <sstream>
#include <system_error>

#include "core/file.h"
#include "report/format.h"
#include "report/html_page.h"
#include "report/run_view.h"
#include "report/svg_chart.h"

namespace kevin::report {
namespace fs = std::filesystem;

namespace {

// Each byte outside the unreserved set and '/' as %XX, so any task id is a safe relative URL.
std::string url_path(const std::string& path) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (char c : path) {
    const auto byte = static_cast<unsigned char>(c);
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (alnum || c == '-' || c == '_' || c == '.' || c == '~' || c == '/') {
      out += c;
    } else {
      out += '%';
      out += kHex[byte >> 4];
      out += kHex[byte & 0xF];
    }
  }
  return out;
}

// A task id names a file under best/ only if it is a plain relative path (no "..", no root).
bool plain_relative(const fs::path& p) {
  if (p.empty() || p.has_root_path()) return false;
  for (const fs::path& part : p) {
    if (part == ".." || part == "." || part.empty()) return false;
  }
  return true;
}

// The href of the task's best kernel relative to the report's folder, or "" when none exists.
std::string best_kernel_href(const fs::path& run_dir, const fs::path& out_file,
                             const std::string& task) {
  if (!plain_relative(fs::path(task))) return "";
  std::error_code ec;
  for (const char* ext : {".cu", ".cpp"}) {
    const fs::path kernel = run_dir / "best" / (task + ext);
    if (!fs::is_regular_file(kernel, ec)) continue;
    const fs::path target = fs::weakly_canonical(fs::absolute(kernel, ec), ec);
    const fs::path base = fs::weakly_canonical(fs::absolute(out_file, ec).parent_path(), ec);
    const fs::path relative = target.lexically_relative(base);
    return url_path((relative.empty() ? target : relative).generic_string());
  }
  return "";
}

std::string overall_section(const GroupMetrics& g) {
  const Summary& s = g.overall;
  std::vector<std::vector<std::string>> rows = {
      {"correct", percent(s.correct.best), percent(s.correct.avg)},
      {"speedup (mean over tasks)", times(s.speedup.best), times(s.speedup.avg)}};
  for (size_t i = 0; i < kFastThresholds.size(); ++i) {
    rows.push_back({"fast<sub>" + trimmed(kFastThresholds[i]) + "</sub>", percent(s.fast[i].best),
                    percent(s.fast[i].avg)});
  }
  std::ostringstream out;
  out << "<p>" << g.tasks.size() << " tasks, " << g.trajectories << " trajectories, " << g.turns
      << " turns, " << g.counts.turns << " records. Solved " << g.solved_tasks << " of "
      << g.tasks.size() << " tasks";
  if (g.geomean_speedup) {
    out << "; geometric-mean best speedup <b>" << times(*g.geomean_speedup) << "</b> over "
        << g.geomean_tasks << " tasks";
  }
  out << ".</p>\n" << html_table({"metric", "best@k", "avg@k"}, rows);
  std::vector<std::string> pass_header = {"k"}, pass_row = {"pass@k"};
  for (const PassAtK& p : s.pass_at_k) {
    pass_header.push_back(std::to_string(p.k));
    pass_row.push_back(percent(p.value));
  }
  out << html_table(pass_header, {pass_row});
  return out.str();
}

std::string counts_section(const Counts& c) {
  std::vector<std::string> header, row;
  for (size_t v = 0; v < kVerdictKinds; ++v) {
    header.push_back(verdict_name(static_cast<VerdictKind>(v)));
    row.push_back(std::to_string(c.verdicts[v]));
  }
  std::ostringstream out;
  out << "<h3>Verdicts and time</h3>\n"
      << html_table(header, {row}) << "<p>Generation " << duration(c.generation_ms)
      << ", compilation " << duration(c.compile_ms) << ", evaluation " << duration(c.eval_ms)
      << "; " << c.cached_evals << " cached evaluations, " << c.truncated
      << " truncated responses.</p>\n";
  return out.str();
}

ChartSeries flat_series(const std::string& label, double y, int k_max) {
  return {label, {{1, y}, {static_cast<double>(k_max), y}}, true};
}

// Speed of light against turns: the best fraction of the roofline bound reached, with the eager
// baseline's for scale. Empty for runs whose evaluations report no speed of light.
std::string roofline_chart(const GroupMetrics& g) {
  const Summary& s = g.overall;
  const std::optional<double> eager = g.counts.baseline_roofline();
  if (s.roofline.best <= 0 && !eager) return "";
  Chart chart{"Speed of light vs turns",
              "turns",
              "fraction of the roofline bound",
              YScale::kFraction,
              {{"best@k", {}, false}, {"avg@k", {}, true}}};
  double top = eager.value_or(0);
  for (const SerialPoint& p : s.serial) {
    chart.series[0].points.push_back({static_cast<double>(p.turns), p.roofline.best});
    chart.series[1].points.push_back({static_cast<double>(p.turns), p.roofline.avg});
    top = std::max(top, p.roofline.best);
  }
  if (eager) chart.series.push_back(flat_series("eager PyTorch", *eager, g.turns));
  // Past the bound (a kernel faster than the measured peaks allow: lower precision, say) the
  // axis must reach beyond 100 %.
  if (top > 1) chart.y_scale = YScale::kLinear;
  return render_svg_chart(chart);
}

std::string charts_section(const GroupMetrics& g) {
  const Summary& s = g.overall;
  Chart speed_turns{"Speedup vs turns",
                    "turns",
                    "mean speedup",
                    YScale::kSpeedup,
                    {{"best@k", {}, false}, {"avg@k", {}, true}}};
  Chart correct_turns{"Correctness vs turns",
                      "turns",
                      "correct",
                      YScale::kFraction,
                      {{"best@k", {}, false}, {"avg@k", {}, true}}};
  for (const SerialPoint& p : s.serial) {
    const double t = p.turns;
    speed_turns.series[0].points.push_back({t, p.speedup.best});
    speed_turns.series[1].points.push_back({t, p.speedup.avg});
    correct_turns.series[0].points.push_back({t, p.correct.best});
    correct_turns.series[1].points.push_back({t, p.correct.avg});
  }
  const int k_max = static_cast<int>(s.parallel.size());
  Chart speed_k{"Speedup vs samples k",
                "trajectories k",
                "mean speedup",
                YScale::kSpeedup,
                {{"best@k (expected)", {}, false}, flat_series("avg@k", s.speedup.avg, k_max)}};
  Chart correct_k{"Correctness vs samples k",
                  "trajectories k",
                  "correct",
                  YScale::kFraction,
                  {{"best@k (expected)", {}, false}, flat_series("avg@k", s.correct.avg, k_max)}};
  for (const ParallelPoint& p : s.parallel) {
    speed_k.series[0].points.push_back({static_cast<double>(p.k), p.speedup});
    correct_k.series[0].points.push_back({static_cast<double>(p.k), p.correct});
  }
  return "<h3>Scaling</h3>\n<p class=\"note\">Turns: each trajectory cut to its first t turns. "
         "Samples: expected best of k "
         "trajectories drawn at random from each task's; avg@k does not depend on k.</p>\n<div "
         "class=\"charts\">\n" +
         render_svg_chart(speed_turns) + render_svg_chart(correct_turns) +
         render_svg_chart(speed_k) + render_svg_chart(correct_k) + roofline_chart(g) + "</div>\n";
}

std::string tasks_section(const GroupMetrics& g, const fs::path& run_dir,
                          const fs::path& out_file) {
  std::vector<std::vector<std::string>> rows;
  for (const TaskMetrics& t : g.tasks) {
    const Summary& s = t.summary;
    const std::string href = best_kernel_href(run_dir, out_file, t.task);
    rows.push_back({"<code>" + html_escape(t.task) + "</code>", std::to_string(t.trajectories),
                    percent(s.correct.best), percent(s.correct.avg), times(s.speedup.best),
                    times(s.speedup.avg), percent(s.fast[kFast1].best), percent(s.fast[kFast1].avg),
                    href.empty() ? "—" : "<a href=\"" + html_escape(href) + "\">kernel</a>"});
  }
  return "<h3>Tasks</h3>\n" +
         html_table({"task", "trajectories", "correct best", "correct avg", "speedup best",
                     "speedup avg", "fast<sub>1</sub> best", "fast<sub>1</sub> avg", "best kernel"},
                    rows);
}

// Each task's verdicts, with a column for every verdict the allocation saw.
std::string task_verdicts_section(const GroupMetrics& g) {
  std::vector<size_t> seen;
  for (size_t v = 0; v < kVerdictKinds; ++v) {
    if (g.counts.verdicts[v] > 0) seen.push_back(v);
  }
  std::vector<std::string> header = {"task", "turns"};
  for (size_t v : seen) header.push_back(verdict_name(static_cast<VerdictKind>(v)));
  std::vector<std::vector<std::string>> rows;
  for (const TaskMetrics& t : g.tasks) {
    std::vector<std::string> row = {"<code>" + html_escape(t.task) + "</code>",
                                    std::to_string(t.counts.turns)};
    for (size_t v : seen)
      row.push_back(t.counts.verdicts[v] ? std::to_string(t.counts.verdicts[v]) : "·");
    rows.push_back(std::move(row));
  }
  return "<h3>Verdicts per task</h3>\n" + html_table(header, rows);
}

std::string group_section(const GroupMetrics& g, const fs::path& run_dir,
                          const fs::path& out_file) {
  return "<h2>Allocation <code>" + html_escape(g.allocation) + "</code></h2>\n" +
         overall_section(g) + charts_section(g) + counts_section(g.counts) +
         tasks_section(g, run_dir, out_file) + task_verdicts_section(g);
}

}  // namespace

std::string render_html_report(const fs::path& run_dir, const Metrics& metrics,
                               const fs::path& out_file) {
  const RunView view = render_run_view(run_dir);
  std::ostringstream body;
  body << "<p class=\"note\">Run folder <code>" << html_escape(run_dir.string())
       << "</code>. Correctness and speedup per "
       << "trajectory (its best correct kernel; 0 when none), best@k = best trajectory of a task, "
          "avg@k = mean over its "
       << "trajectories, both then averaged over tasks (docs/report.md).</p>\n<h2>Run</h2>\n"
       << view.settings;
  if (metrics.groups.empty()) body << "<p>No turns recorded.</p>\n";
  for (const GroupMetrics& g : metrics.groups) body << group_section(g, run_dir, out_file);
  if (!metrics.groups.empty()) body << view.trajectories;
  return html_page("kevin report: " + folder_name(run_dir), body.str());
}

Status write_html_report(const fs::path& run_dir, const Metrics& metrics,
                         const fs::path& out_file) {
  return write_file_atomic(out_file, render_html_report(run_dir, metrics, out_file));
}

}  // namespace kevin::report
