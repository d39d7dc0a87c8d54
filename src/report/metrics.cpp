// metrics.cpp — rows to metrics: group by allocation and task, rebuild each trajectory's full
// kernel history (beam lineage), reduce every trajectory to its outcome under each turn limit,
// then aggregate over trajectories (best/avg and the estimators) and over tasks (means).
#include "report/metrics.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>
#include <sstream>

#include "core/file.h"

namespace kevin::report {
namespace fs = std::filesystem;

namespace {

// One evaluated kernel in a trajectory's history.
struct Kernel {
  int turn = 0;
  bool correct = false;
  double speedup = 0;   // 0 when not correct or not measured
  double roofline = 0;  // fraction of the roofline bound, likewise
};

struct Trajectory {
  std::optional<int> parent;
  std::vector<Kernel> own;  // this trajectory's own records, by turn
};

struct TaskRecords {
  std::map<int, Trajectory> trajectories;
  Counts counts;
};

struct Group {
  std::string allocation;
  int turns = 0;
  std::map<std::string, TaskRecords> tasks;
};

// What a trajectory achieved within some turn limit.
struct Outcome {
  bool correct = false;
  double speedup = 0;   // fastest correct kernel, 0 when none
  double roofline = 0;  // highest fraction of the roofline bound of a correct kernel
};

// [sample][t − 1]: the outcome of each sample trajectory using its turns < t.
using OutcomeTable = std::vector<std::vector<Outcome>>;

void count_row(const TurnRow& row, Counts& c) {
  ++c.turns;
  ++c.verdicts[static_cast<size_t>(row.verdict)];
  c.generation_ms += row.generation_ms;
  // A cached evaluation repeats the first one's times in its record; they were spent once.
  if (!row.cached_eval) {
    c.compile_ms += row.compile_ms;
    c.eval_ms += row.eval_ms;
  }
  c.cached_evals += row.cached_eval ? 1 : 0;
  c.truncated += row.truncated ? 1 : 0;
  if (row.baseline_roofline_fraction) {
    c.baseline_roofline_sum += *row.baseline_roofline_fraction;
    ++c.baseline_roofline_turns;
  }
}

void add_counts(const Counts& from, Counts& to) {
  to.turns += from.turns;
  for (size_t v = 0; v < kVerdictKinds; ++v) to.verdicts[v] += from.verdicts[v];
  to.generation_ms += from.generation_ms;
  to.compile_ms += from.compile_ms;
  to.eval_ms += from.eval_ms;
  to.cached_evals += from.cached_evals;
  to.truncated += from.truncated;
  to.baseline_roofline_sum += from.baseline_roofline_sum;
  to.baseline_roofline_turns += from.baseline_roofline_turns;
}

std::vector<Group> group_rows(const std::vector<TurnRow>& rows) {
  std::vector<Group> groups;
  for (const TurnRow& row : rows) {
    auto group = std::find_if(groups.begin(), groups.end(),
                              [&](const Group& g) { return g.allocation == row.allocation; });
    if (group == groups.end()) group = groups.insert(groups.end(), Group{row.allocation, 0, {}});
    group->turns = std::max(group->turns, row.turn + 1);
    TaskRecords& task = group->tasks[row.task];
    Trajectory& trajectory = task.trajectories[row.trajectory];
    trajectory.parent = row.parent;
    trajectory.own.push_back({row.turn, row.correct, row.correct ? row.speedup.value_or(0.0) : 0.0,
                              row.correct ? row.roofline_fraction.value_or(0.0) : 0.0});
    count_row(row, task.counts);
  }
  for (Group& group : groups) {
    for (auto& [task_id, task] : group.tasks) {
      for (auto& [id, trajectory] : task.trajectories) {
        std::sort(trajectory.own.begin(), trajectory.own.end(),
                  [](const Kernel& a, const Kernel& b) { return a.turn < b.turn; });
      }
    }
  }
  return groups;
}

// Every trajectory's full history: its ancestors' kernels before its first own turn, then its
// own. Iterative (walk up to a resolved ancestor or a root, then resolve downwards) so long
// beam chains cannot exhaust the stack; a missing parent or a cycle ends the walk.
std::map<int, std::vector<Kernel>> full_histories(const std::map<int, Trajectory>& all) {
  std::map<int, std::vector<Kernel>> done;
  for (const auto& [id, unused] : all) {
    std::vector<int> chain;
    std::set<int> on_chain;
    for (int at = id; !done.contains(at) && on_chain.insert(at).second;) {
      chain.push_back(at);
      const std::optional<int>& parent = all.at(at).parent;
      if (!parent || !all.contains(*parent)) break;
      at = *parent;
    }
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      const Trajectory& t = all.at(*it);
      std::vector<Kernel> history;
      if (t.parent && done.contains(*t.parent)) {
        for (const Kernel& k : done.at(*t.parent)) {
          if (k.turn < t.own.front().turn) history.push_back(k);
        }
      }
      history.insert(history.end(), t.own.begin(), t.own.end());
      done.emplace(*it, std::move(history));
    }
  }
  return done;
}

// The samples are all trajectories except those a child continues after their last turn: in a
// beam run such a trajectory's whole history reappears inside each of its copies.
std::set<int> continued_trajectories(const std::map<int, Trajectory>& all) {
  std::set<int> continued;
  for (const auto& [id, t] : all) {
    if (!t.parent) continue;
    const auto parent = all.find(*t.parent);
    if (parent != all.end() && t.own.front().turn > parent->second.own.back().turn)
      continued.insert(*t.parent);
  }
  return continued;
}

// Outcomes under the turn limits t = 1..turns; `history` is sorted by turn.
std::vector<Outcome> outcomes_by_turn_limit(const std::vector<Kernel>& history, int turns) {
  std::vector<Outcome> out;
  Outcome running;
  size_t next = 0;
  for (int t = 1; t <= turns; ++t) {
    for (; next < history.size() && history[next].turn < t; ++next) {
      if (!history[next].correct) continue;
      running.correct = true;
      running.speedup = std::max(running.speedup, history[next].speedup);
      running.roofline = std::max(running.roofline, history[next].roofline);
    }
    out.push_back(running);
  }
  return out;
}

OutcomeTable sample_outcomes(const std::map<int, Trajectory>& trajectories, int turns) {
  const std::map<int, std::vector<Kernel>> histories = full_histories(trajectories);
  const std::set<int> continued = continued_trajectories(trajectories);
  OutcomeTable table;
  for (const auto& [id, history] : histories) {
    if (!continued.contains(id)) table.push_back(outcomes_by_turn_limit(history, turns));
  }
  return table;
}

// Column t − 1 of the table: every sample's outcome using its turns < t.
std::vector<Outcome> at_turn_limit(const OutcomeTable& table, int t) {
  std::vector<Outcome> column;
  for (const auto& row : table) column.push_back(row[static_cast<size_t>(t - 1)]);
  return column;
}

std::vector<double> correctness(const std::vector<Outcome>& outcomes) {
  std::vector<double> v;
  for (const Outcome& o : outcomes) v.push_back(o.correct ? 1.0 : 0.0);
  return v;
}

std::vector<double> speedups(const std::vector<Outcome>& outcomes) {
  std::vector<double> v;
  for (const Outcome& o : outcomes) v.push_back(o.speedup);
  return v;
}

std::vector<double> rooflines(const std::vector<Outcome>& outcomes) {
  std::vector<double> v;
  for (const Outcome& o : outcomes) v.push_back(o.roofline);
  return v;
}

std::vector<double> fast(const std::vector<Outcome>& outcomes, double p) {
  std::vector<double> v;
  for (const Outcome& o : outcomes) v.push_back(o.correct && o.speedup >= p ? 1.0 : 0.0);
  return v;
}

BestAvg best_avg(const std::vector<double>& values) {
  if (values.empty()) return {};
  return {*std::max_element(values.begin(), values.end()),
          std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size())};
}

// k = 1, 2, 4, ... below n, then n itself.
std::vector<int> pass_ks(int n) {
  std::vector<int> ks;
  for (int k = 1; k < n; k *= 2) ks.push_back(k);
  if (n > 0) ks.push_back(n);
  return ks;
}

std::vector<ParallelPoint> parallel_curve(const std::vector<Outcome>& outcomes, int k_max) {
  std::vector<ParallelPoint> curve;
  const std::vector<double> c = correctness(outcomes), s = speedups(outcomes);
  for (int k = 1; k <= k_max; ++k)
    curve.push_back({k, expected_best_at_k(c, k), expected_best_at_k(s, k)});
  return curve;
}

Summary summarise_task(const OutcomeTable& table, int turns) {
  Summary s;
  const std::vector<Outcome> final_outcomes = at_turn_limit(table, turns);
  s.correct = best_avg(correctness(final_outcomes));
  s.speedup = best_avg(speedups(final_outcomes));
  s.roofline = best_avg(rooflines(final_outcomes));
  for (size_t i = 0; i < kFastThresholds.size(); ++i)
    s.fast[i] = best_avg(fast(final_outcomes, kFastThresholds[i]));
  const int n = static_cast<int>(table.size());
  const int c = static_cast<int>(std::count_if(final_outcomes.begin(), final_outcomes.end(),
                                               [](const Outcome& o) { return o.correct; }));
  for (int k : pass_ks(n)) s.pass_at_k.push_back({k, pass_at_k(n, c, k)});
  for (int t = 1; t <= turns; ++t) {
    const std::vector<Outcome> column = at_turn_limit(table, t);
    s.serial.push_back({t, best_avg(correctness(column)), best_avg(speedups(column)),
                        best_avg(rooflines(column))});
  }
  s.parallel = parallel_curve(final_outcomes, n);
  return s;
}

BestAvg mean_of(const std::vector<BestAvg>& values) {
  BestAvg m;
  for (const BestAvg& v : values) {
    m.best += v.best;
    m.avg += v.avg;
  }
  if (!values.empty()) {
    m.best /= static_cast<double>(values.size());
    m.avg /= static_cast<double>(values.size());
  }
  return m;
}

// The mean over tasks of one BestAvg picked from each task's summary by `pick`.
template <typename Pick>
BestAvg mean_over_tasks(const std::vector<TaskMetrics>& tasks, Pick pick) {
  std::vector<BestAvg> values;
  for (const TaskMetrics& t : tasks) values.push_back(pick(t.summary));
  return mean_of(values);
}

// Per-task means. A task with fewer samples than a k contributes its value at k = its sample
// count (pass@k and the parallel curve), so every task counts at every k.
Summary summarise_group(const std::vector<TaskMetrics>& tasks,
                        const std::vector<std::vector<Outcome>>& final_outcomes, int turns) {
  Summary s;
  const auto task_count = static_cast<double>(tasks.size());
  s.correct = mean_over_tasks(tasks, [](const Summary& x) { return x.correct; });
  s.speedup = mean_over_tasks(tasks, [](const Summary& x) { return x.speedup; });
  s.roofline = mean_over_tasks(tasks, [](const Summary& x) { return x.roofline; });
  for (size_t i = 0; i < kFastThresholds.size(); ++i) {
    s.fast[i] = mean_over_tasks(tasks, [i](const Summary& x) { return x.fast[i]; });
  }
  for (int t = 1; t <= turns; ++t) {
    const auto index = static_cast<size_t>(t - 1);
    s.serial.push_back(
        {t, mean_over_tasks(tasks, [index](const Summary& x) { return x.serial[index].correct; }),
         mean_over_tasks(tasks, [index](const Summary& x) { return x.serial[index].speedup; }),
         mean_over_tasks(tasks, [index](const Summary& x) { return x.serial[index].roofline; })});
  }
  int n_max = 0;
  for (const TaskMetrics& t : tasks) n_max = std::max(n_max, t.trajectories);
  for (int k : pass_ks(n_max)) {
    double sum = 0;
    for (const TaskMetrics& t : tasks) sum += pass_at_k(t.trajectories, t.correct_trajectories, k);
    s.pass_at_k.push_back({k, sum / task_count});
  }
  for (int k = 1; k <= n_max; ++k) s.parallel.push_back({k, 0.0, 0.0});
  for (const std::vector<Outcome>& outcomes : final_outcomes) {
    const std::vector<ParallelPoint> curve = parallel_curve(outcomes, n_max);
    for (size_t k = 0; k < curve.size(); ++k) {
      s.parallel[k].correct += curve[k].correct / task_count;
      s.parallel[k].speedup += curve[k].speedup / task_count;
    }
  }
  return s;
}

void set_geomean(GroupMetrics& g) {
  double log_sum = 0;
  for (const TaskMetrics& t : g.tasks) {
    if (t.correct_trajectories == 0) continue;
    ++g.solved_tasks;
    if (t.summary.speedup.best <= 0) continue;
    log_sum += std::log(t.summary.speedup.best);
    ++g.geomean_tasks;
  }
  if (g.geomean_tasks > 0) g.geomean_speedup = std::exp(log_sum / g.geomean_tasks);
}

GroupMetrics group_metrics(const Group& group) {
  GroupMetrics g;
  g.allocation = group.allocation;
  g.turns = group.turns;
  std::vector<std::vector<Outcome>> final_outcomes;
  for (const auto& [task_id, records] : group.tasks) {
    const OutcomeTable table = sample_outcomes(records.trajectories, group.turns);
    TaskMetrics t;
    t.task = task_id;
    t.trajectories = static_cast<int>(table.size());
    final_outcomes.push_back(at_turn_limit(table, group.turns));
    t.correct_trajectories =
        static_cast<int>(std::count_if(final_outcomes.back().begin(), final_outcomes.back().end(),
                                       [](const Outcome& o) { return o.correct; }));
    t.summary = summarise_task(table, group.turns);
    t.counts = records.counts;
    add_counts(t.counts, g.counts);
    g.trajectories += t.trajectories;
    g.tasks.push_back(std::move(t));
  }
  g.overall = summarise_group(g.tasks, final_outcomes, group.turns);
  set_geomean(g);
  return g;
}

Json best_avg_json(const BestAvg& v) { return {{"best", v.best}, {"avg", v.avg}}; }

// "0", "1", "1.5", "2": the p of fast_p as a JSON key.
std::string threshold_key(double p) {
  std::ostringstream s;
  s << p;
  return s.str();
}

Json summary_json(const Summary& s) {
  Json fast_json = Json::object();
  for (size_t i = 0; i < kFastThresholds.size(); ++i)
    fast_json[threshold_key(kFastThresholds[i])] = best_avg_json(s.fast[i]);
  Json pass = Json::array();
  for (const PassAtK& p : s.pass_at_k) pass.push_back({{"k", p.k}, {"value", p.value}});
  Json serial = Json::array();
  for (const SerialPoint& p : s.serial) {
    serial.push_back({{"turns", p.turns},
                      {"correct", best_avg_json(p.correct)},
                      {"speedup", best_avg_json(p.speedup)},
                      {"roofline", best_avg_json(p.roofline)}});
  }
  Json parallel = Json::array();
  for (const ParallelPoint& p : s.parallel)
    parallel.push_back({{"k", p.k}, {"correct", p.correct}, {"speedup", p.speedup}});
  return {{"correct", best_avg_json(s.correct)},
          {"speedup", best_avg_json(s.speedup)},
          {"roofline", best_avg_json(s.roofline)},
          {"fast", fast_json},
          {"pass_at_k", pass},
          {"serial", serial},
          {"parallel", parallel}};
}

Json counts_json(const Counts& c) {
  Json verdicts = Json::object();
  for (size_t v = 0; v < kVerdictKinds; ++v)
    verdicts[verdict_name(static_cast<VerdictKind>(v))] = c.verdicts[v];
  return {{"turns", c.turns},
          {"verdicts", verdicts},
          {"generation_ms", c.generation_ms},
          {"compile_ms", c.compile_ms},
          {"eval_ms", c.eval_ms},
          {"cached_evals", c.cached_evals},
          {"truncated", c.truncated},
          {"baseline_roofline", c.baseline_roofline() ? Json(*c.baseline_roofline()) : Json()}};
}

Json group_json(const GroupMetrics& g) {
  Json tasks = Json::array();
  for (const TaskMetrics& t : g.tasks) {
    Json task = summary_json(t.summary);
    task["task"] = t.task;
    task["trajectories"] = t.trajectories;
    task["correct_trajectories"] = t.correct_trajectories;
    task["counts"] = counts_json(t.counts);
    tasks.push_back(std::move(task));
  }
  return {{"allocation", g.allocation},
          {"turns", g.turns},
          {"task_count", g.tasks.size()},
          {"trajectories", g.trajectories},
          {"solved_tasks", g.solved_tasks},
          {"geomean_speedup", g.geomean_speedup ? Json(*g.geomean_speedup) : Json(nullptr)},
          {"geomean_tasks", g.geomean_tasks},
          {"overall", summary_json(g.overall)},
          {"counts", counts_json(g.counts)},
          {"tasks", tasks}};
}

}  // namespace

std::optional<double> Counts::baseline_roofline() const {
  if (baseline_roofline_turns == 0) return std::nullopt;
  return baseline_roofline_sum / static_cast<double>(baseline_roofline_turns);
}

double pass_at_k(int n, int c, int k) {
  if (n <= 0 || c <= 0) return 0.0;
  c = std::min(c, n);
  k = std::clamp(k, 1, n);
  if (n - c < k) return 1.0;
  // C(n−c, k)/C(n, k) = Π_{i=n−c+1..n} (1 − k/i): the chance a k-subset holds no correct sample.
  double none_correct = 1.0;
  for (int i = n - c + 1; i <= n; ++i) none_correct *= 1.0 - static_cast<double>(k) / i;
  return 1.0 - none_correct;
}

double expected_best_at_k(std::vector<double> values, int k) {
  if (values.empty()) return 0.0;
  const int m = static_cast<int>(values.size());
  k = std::clamp(k, 1, m);
  std::sort(values.begin(), values.end());
  // The i-th smallest value (1-based) is the maximum of C(i−1, k−1) of the C(m, k) subsets.
  // Its weight w_i = C(i−1, k−1)/C(m, k) starts at w_m = k/m and w_{i−1} = w_i·(i−k)/(i−1),
  // which avoids the binomials themselves (they overflow for a few hundred samples).
  double weight = static_cast<double>(k) / m;
  double expected = 0;
  for (int i = m; i >= k; --i) {
    expected += values[static_cast<size_t>(i - 1)] * weight;
    if (i > k) weight *= static_cast<double>(i - k) / (i - 1);
  }
  return expected;
}

Metrics compute_metrics(const std::vector<TurnRow>& rows) {
  Metrics metrics;
  for (const Group& group : group_rows(rows)) metrics.groups.push_back(group_metrics(group));
  return metrics;
}

Json to_json(const Metrics& metrics) {
  Json groups = Json::array();
  for (const GroupMetrics& g : metrics.groups) groups.push_back(group_json(g));
  return {{"schema", "kevin.metrics.v1"}, {"groups", groups}};
}

Result<Metrics> metrics_of_run(const fs::path& run_dir) {
  KEVIN_ASSIGN_OR_RETURN(const std::vector<TurnRow> rows,
                         read_trajectories(run_dir / "trajectories.jsonl"));
  return compute_metrics(rows);
}

Status write_metrics_file(const fs::path& run_dir) {
  KEVIN_ASSIGN_OR_RETURN(const Metrics metrics, metrics_of_run(run_dir));
  return write_file_atomic(run_dir / "metrics.json", dump_json(to_json(metrics), 1) + "\n");
}

}  // namespace kevin::report
