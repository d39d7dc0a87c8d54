// tables.cpp — text rendering of Metrics, one block per allocation.
#include "report/tables.h"

#include <sstream>

#include "report/format.h"

namespace kevin::report {
namespace {

using Table = std::vector<std::vector<std::string>>;

Table overall_table(const Summary& s) {
  Table t = {{"metric", "best@k", "avg@k"},
             {"correct", percent(s.correct.best), percent(s.correct.avg)},
             {"speedup (mean)", times(s.speedup.best), times(s.speedup.avg)}};
  for (size_t i = 0; i < kFastThresholds.size(); ++i) {
    t.push_back(
        {"fast_" + trimmed(kFastThresholds[i]), percent(s.fast[i].best), percent(s.fast[i].avg)});
  }
  return t;
}

std::string pass_line(const Summary& s) {
  std::string line = "pass@k:";
  for (const PassAtK& p : s.pass_at_k)
    line += "  pass@" + std::to_string(p.k) + " " + percent(p.value);
  return line + "\n";
}

std::string solved_line(const GroupMetrics& g) {
  std::string line =
      "solved " + std::to_string(g.solved_tasks) + "/" + std::to_string(g.tasks.size()) + " tasks";
  if (g.geomean_speedup) {
    line += "; geometric-mean best speedup " + times(*g.geomean_speedup) + " over " +
            std::to_string(g.geomean_tasks) + (g.geomean_tasks == 1 ? " task" : " tasks");
  }
  return line + "\n";
}

Table serial_table(const Summary& s) {
  Table t = {{"turns", "correct best", "correct avg", "speedup best", "speedup avg"}};
  for (const SerialPoint& p : s.serial) {
    t.push_back({std::to_string(p.turns), percent(p.correct.best), percent(p.correct.avg),
                 times(p.speedup.best), times(p.speedup.avg)});
  }
  return t;
}

Table parallel_table(const Summary& s) {
  Table t = {{"k", "correct best@k", "speedup best@k"}};
  for (const ParallelPoint& p : s.parallel)
    t.push_back({std::to_string(p.k), percent(p.correct), times(p.speedup)});
  return t;
}

std::string counts_lines(const Counts& c) {
  std::string verdicts = "verdicts:";
  for (size_t v = 0; v < kVerdictKinds; ++v) {
    if (c.verdicts[v] > 0)
      verdicts += " " + std::string(verdict_name(static_cast<VerdictKind>(v))) + " " +
                  std::to_string(c.verdicts[v]);
  }
  return verdicts + "\ntime: generation " + duration(c.generation_ms) + ", compile " +
         duration(c.compile_ms) + ", evaluation " + duration(c.eval_ms) + "; " +
         std::to_string(c.cached_evals) + " cached evaluations, " + std::to_string(c.truncated) +
         " truncated responses\n";
}

Table task_table(const GroupMetrics& g) {
  Table t = {{"task", "traj", "correct best", "correct avg", "speedup best", "speedup avg",
              "fast_1 best", "fast_1 avg"}};
  for (const TaskMetrics& task : g.tasks) {
    const Summary& s = task.summary;
    t.push_back({task.task, std::to_string(task.trajectories), percent(s.correct.best),
                 percent(s.correct.avg), times(s.speedup.best), times(s.speedup.avg),
                 percent(s.fast[kFast1].best), percent(s.fast[kFast1].avg)});
  }
  return t;
}

std::string group_block(const GroupMetrics& g) {
  std::ostringstream out;
  out << "allocation " << g.allocation << ": " << g.tasks.size()
      << (g.tasks.size() == 1 ? " task, " : " tasks, ") << g.trajectories << " trajectories, "
      << g.turns << " turns, " << g.counts.turns << " records\n\n"
      << text_table(overall_table(g.overall)) << solved_line(g) << pass_line(g.overall)
      << "\nserial scaling (turns < t):\n"
      << text_table(serial_table(g.overall))
      << "\nparallel scaling (expected best of k trajectories):\n"
      << text_table(parallel_table(g.overall)) << "\n"
      << counts_lines(g.counts) << "\n"
      << text_table(task_table(g));
  return out.str();
}

}  // namespace

std::string render_tables(const Metrics& metrics) {
  if (metrics.groups.empty()) return "no turns recorded\n";
  std::string out;
  for (const GroupMetrics& g : metrics.groups) {
    if (!out.empty()) out += "\n";
    out += group_block(g);
  }
  return out;
}

}  // namespace kevin::report
