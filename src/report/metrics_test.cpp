// metrics_test.cpp — every metric against values worked out by hand on small runs (the
// 2-task set of test_records.h, beam lineages), the estimators against brute force, the JSON
// layout, metrics.json and the terminal tables.
#include "report/metrics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "core/file.h"
#include "report/tables.h"
#include "report/test_records.h"
#include "sys/tempdir.h"

namespace kevin::report {
namespace {
using testing::KernelSpec;
using testing::rows_of;
using testing::trajectory_records;

constexpr double kEps = 1e-12;
const KernelSpec kWrong{"wrong_answer"};

// By value: callers pass a temporary Metrics.
GroupMetrics only_group(const Metrics& m) {
  EXPECT_EQ(m.groups.size(), 1u);
  return m.groups.at(0);
}

TEST(Metrics, PassAtKHandValues) {
  EXPECT_NEAR(pass_at_k(3, 2, 1), 2.0 / 3, kEps);
  EXPECT_NEAR(pass_at_k(3, 2, 2), 1.0, kEps) << "n − c < k";
  EXPECT_NEAR(pass_at_k(3, 1, 2), 2.0 / 3, kEps) << "1 − C(2,2)/C(3,2)";
  EXPECT_NEAR(pass_at_k(5, 2, 2), 0.7, kEps) << "1 − C(3,2)/C(5,2) = 1 − 3/10";
  EXPECT_NEAR(pass_at_k(10, 3, 4), 5.0 / 6, kEps) << "1 − C(7,4)/C(10,4) = 1 − 35/210";
  EXPECT_NEAR(pass_at_k(200, 1, 100), 0.5, 1e-9) << "binomials near 1e58 stay exact as a product";
  EXPECT_NEAR(pass_at_k(16, 4, 1), 0.25, kEps) << "pass@1 = c/n";
  EXPECT_EQ(pass_at_k(4, 0, 2), 0.0);
  EXPECT_EQ(pass_at_k(0, 0, 1), 0.0);
  EXPECT_NEAR(pass_at_k(3, 1, 8), 1.0, kEps) << "k clamped to n";
}

// E[max] over all k-subsets, by enumeration.
double brute_force_best(const std::vector<double>& values, int k) {
  const size_t m = values.size();
  double sum = 0;
  int subsets = 0;
  for (unsigned mask = 0; mask < (1u << m); ++mask) {
    if (__builtin_popcount(mask) != k) continue;
    double best = -1;
    for (size_t i = 0; i < m; ++i) {
      if ((mask >> i & 1u) != 0) best = std::max(best, values[i]);
    }
    sum += best;
    ++subsets;
  }
  return sum / subsets;
}

TEST(Metrics, ExpectedBestMatchesBruteForce) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> speedup(0.0, 3.0);
  for (int m = 1; m <= 9; ++m) {
    std::vector<double> values;
    for (int i = 0; i < m; ++i) values.push_back(i % 3 == 0 ? 0.0 : speedup(rng));
    if (m > 2) values[1] = values[2];  // ties
    for (int k = 1; k <= m; ++k) {
      EXPECT_NEAR(expected_best_at_k(values, k), brute_force_best(values, k), 1e-12)
          << "m=" << m << " k=" << k;
    }
  }
  EXPECT_NEAR(expected_best_at_k({0, 1.2, 2.0}, 2), 5.2 / 3, kEps);
  EXPECT_EQ(expected_best_at_k({}, 3), 0.0);
  EXPECT_NEAR(expected_best_at_k({1, 2, 3}, 9), 3.0, kEps) << "k clamped to m";
}

TEST(Metrics, ExpectedBestOfCorrectnessIsPassAtK) {
  for (int n = 1; n <= 12; ++n) {
    for (int c = 0; c <= n; ++c) {
      std::vector<double> values(static_cast<size_t>(n), 0.0);
      std::fill_n(values.begin(), c, 1.0);
      for (int k = 1; k <= n; ++k)
        EXPECT_NEAR(expected_best_at_k(values, k), pass_at_k(n, c, k), 1e-12);
    }
  }
  // Many samples: the binomials would overflow a double; the recurrence does not.
  std::vector<double> large(1200, 0.0);
  large.back() = 1.0;
  EXPECT_NEAR(expected_best_at_k(large, 600), 0.5, 1e-9);
}

TEST(Metrics, TwoTasksPerTask) {
  const GroupMetrics g = only_group(compute_metrics(rows_of(testing::two_task_records())));
  EXPECT_EQ(g.allocation, "3x3");
  EXPECT_EQ(g.turns, 3);
  EXPECT_EQ(g.trajectories, 6);
  ASSERT_EQ(g.tasks.size(), 2u);
  const TaskMetrics& a = g.tasks[0];
  EXPECT_EQ(a.task, "lvl/a");
  EXPECT_EQ(a.trajectories, 3);
  EXPECT_EQ(a.correct_trajectories, 2);
  // Trajectory performances: 1.2, 0, 2.0.
  EXPECT_NEAR(a.summary.correct.best, 1.0, kEps);
  EXPECT_NEAR(a.summary.correct.avg, 2.0 / 3, kEps);
  EXPECT_NEAR(a.summary.speedup.best, 2.0, kEps);
  EXPECT_NEAR(a.summary.speedup.avg, 3.2 / 3, kEps);
  const double fast_avg_a[] = {2.0 / 3, 2.0 / 3, 1.0 / 3, 1.0 / 3};  // p = 0, 1, 1.5, 2
  for (size_t i = 0; i < kFastThresholds.size(); ++i) {
    EXPECT_NEAR(a.summary.fast[i].best, 1.0, kEps) << i;
    EXPECT_NEAR(a.summary.fast[i].avg, fast_avg_a[i], kEps) << i;
  }
  const TaskMetrics& b = g.tasks[1];
  EXPECT_EQ(b.task, "lvl/b");
  EXPECT_EQ(b.correct_trajectories, 1);
  // Trajectory performances: 0.5, 0, 0.
  EXPECT_NEAR(b.summary.speedup.best, 0.5, kEps);
  EXPECT_NEAR(b.summary.speedup.avg, 0.5 / 3, kEps);
  EXPECT_NEAR(b.summary.fast[0].avg, 1.0 / 3, kEps);
  for (size_t i = 1; i < kFastThresholds.size(); ++i) EXPECT_EQ(b.summary.fast[i].best, 0.0) << i;
}

TEST(Metrics, TwoTasksOverall) {
  const GroupMetrics g = only_group(compute_metrics(rows_of(testing::two_task_records())));
  const Summary& s = g.overall;
  EXPECT_NEAR(s.correct.best, 1.0, kEps);
  EXPECT_NEAR(s.correct.avg, 0.5, kEps) << "(2/3 + 1/3) / 2";
  EXPECT_NEAR(s.speedup.best, 1.25, kEps) << "(2.0 + 0.5) / 2";
  EXPECT_NEAR(s.speedup.avg, 3.7 / 6, kEps) << "(3.2/3 + 0.5/3) / 2";
  const double fast_best[] = {1.0, 0.5, 0.5, 0.5};
  const double fast_avg[] = {0.5, 1.0 / 3, 1.0 / 6, 1.0 / 6};
  for (size_t i = 0; i < kFastThresholds.size(); ++i) {
    EXPECT_NEAR(s.fast[i].best, fast_best[i], kEps) << i;
    EXPECT_NEAR(s.fast[i].avg, fast_avg[i], kEps) << i;
  }
  EXPECT_EQ(g.solved_tasks, 2);
  EXPECT_EQ(g.geomean_tasks, 2);
  ASSERT_TRUE(g.geomean_speedup.has_value());
  EXPECT_NEAR(*g.geomean_speedup, 1.0, kEps) << "sqrt(2.0 × 0.5)";
}

TEST(Metrics, PassAtKPerTaskAndOverall) {
  const GroupMetrics g = only_group(compute_metrics(rows_of(testing::two_task_records())));
  const auto values = [](const std::vector<PassAtK>& p) {
    std::vector<std::pair<int, double>> v;
    for (const PassAtK& x : p) v.emplace_back(x.k, x.value);
    return v;
  };
  ASSERT_EQ(g.tasks[0].summary.pass_at_k.size(), 3u)
      << "k = 1, 2 (powers of two below n), then n = 3";
  const auto a = values(g.tasks[0].summary.pass_at_k), b = values(g.tasks[1].summary.pass_at_k),
             all = values(g.overall.pass_at_k);
  const int ks[] = {1, 2, 3};
  const double a_hand[] = {2.0 / 3, 1.0, 1.0}, b_hand[] = {1.0 / 3, 2.0 / 3, 1.0},
               all_hand[] = {0.5, 5.0 / 6, 1.0};
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(a[i].first, ks[i]);
    EXPECT_NEAR(a[i].second, a_hand[i], kEps) << i;
    EXPECT_NEAR(b[i].second, b_hand[i], kEps) << i;
    EXPECT_EQ(all[i].first, ks[i]);
    EXPECT_NEAR(all[i].second, all_hand[i], kEps) << i;
  }
}

TEST(Metrics, SerialCurve) {
  const GroupMetrics g = only_group(compute_metrics(rows_of(testing::two_task_records())));
  const std::vector<SerialPoint>& s = g.overall.serial;
  ASSERT_EQ(s.size(), 3u);
  // t = 1: only task a's trajectory 2 (2.0x) is correct.
  EXPECT_EQ(s[0].turns, 1);
  EXPECT_NEAR(s[0].correct.best, 0.5, kEps);
  EXPECT_NEAR(s[0].correct.avg, 1.0 / 6, kEps);
  EXPECT_NEAR(s[0].speedup.best, 1.0, kEps);
  EXPECT_NEAR(s[0].speedup.avg, 1.0 / 3, kEps) << "(2.0/3 + 0) / 2";
  // t = 2: task a has 1.2x and 2.0x; task b is still unsolved.
  EXPECT_NEAR(s[1].correct.best, 0.5, kEps);
  EXPECT_NEAR(s[1].correct.avg, 1.0 / 3, kEps);
  EXPECT_NEAR(s[1].speedup.best, 1.0, kEps);
  EXPECT_NEAR(s[1].speedup.avg, 3.2 / 6, kEps);
  // t = 3: everything.
  EXPECT_NEAR(s[2].correct.avg, g.overall.correct.avg, kEps);
  EXPECT_NEAR(s[2].speedup.best, g.overall.speedup.best, kEps);
  EXPECT_NEAR(s[2].speedup.avg, g.overall.speedup.avg, kEps);
  const std::vector<SerialPoint>& a = g.tasks[0].summary.serial;
  EXPECT_NEAR(a[0].speedup.avg, 2.0 / 3, kEps);
  EXPECT_NEAR(a[1].speedup.avg, 3.2 / 3, kEps);
}

TEST(Metrics, SpeedOfLightIsTheBestFractionOfTheRooflineOverTurns) {
  const GroupMetrics g = only_group(compute_metrics(rows_of(testing::speed_of_light_records())));
  const Summary& s = g.tasks[0].summary;
  EXPECT_NEAR(s.roofline.best, 0.5, kEps);
  EXPECT_NEAR(s.roofline.avg, 0.4, kEps) << "(0.5 + 0.3) / 2: the wrong answer's 0.9 is ignored";
  ASSERT_EQ(s.serial.size(), 2u);
  EXPECT_NEAR(s.serial[0].roofline.best, 0.2, kEps);
  EXPECT_NEAR(s.serial[0].roofline.avg, 0.1, kEps);
  EXPECT_NEAR(s.serial[1].roofline.avg, 0.4, kEps);
  ASSERT_TRUE(g.counts.baseline_roofline().has_value());
  EXPECT_NEAR(*g.counts.baseline_roofline(), 0.4 / 3, kEps) << "correct turns only";
  const Json j = to_json(compute_metrics(rows_of(testing::speed_of_light_records())));
  EXPECT_NEAR(j["groups"][0]["overall"]["roofline"]["best"].get<double>(), 0.5, kEps);
  EXPECT_NEAR(j["groups"][0]["counts"]["baseline_roofline"].get<double>(), 0.4 / 3, kEps);
  const GroupMetrics none = only_group(compute_metrics(rows_of(testing::two_task_records())));
  EXPECT_EQ(none.overall.roofline.best, 0);
  EXPECT_FALSE(none.counts.baseline_roofline().has_value());
}

TEST(Metrics, ParallelCurve) {
  const GroupMetrics g = only_group(compute_metrics(rows_of(testing::two_task_records())));
  const std::vector<ParallelPoint>& p = g.overall.parallel;
  ASSERT_EQ(p.size(), 3u);
  // Task a speedups {0, 1.2, 2.0}: k=1 3.2/3, k=2 (1.2 + 2 + 2)/3, k=3 2. Task b {0, 0, 0.5}:
  // k=1 0.5/3, k=2 (0 + 0.5 + 0.5)/3, k=3 0.5.
  EXPECT_NEAR(p[0].speedup, (3.2 / 3 + 0.5 / 3) / 2, kEps);
  EXPECT_NEAR(p[1].speedup, (5.2 / 3 + 1.0 / 3) / 2, kEps);
  EXPECT_NEAR(p[2].speedup, 1.25, kEps);
  for (size_t k = 0; k < p.size(); ++k) {
    EXPECT_EQ(p[k].k, static_cast<int>(k) + 1);
    EXPECT_NEAR(p[k].correct, g.overall.pass_at_k[k].value, kEps)
        << "expected best correctness is pass@k";
  }
  EXPECT_NEAR(p[0].speedup, g.overall.speedup.avg, kEps) << "best@1 in expectation is avg";
  EXPECT_NEAR(p[2].speedup, g.overall.speedup.best, kEps) << "best@m is best";
}

TEST(Metrics, CountsAndVerdicts) {
  const GroupMetrics g = only_group(compute_metrics(rows_of(testing::two_task_records())));
  EXPECT_EQ(g.counts.turns, 18);
  const auto count = [&](VerdictKind v) { return g.counts.verdicts[static_cast<size_t>(v)]; };
  EXPECT_EQ(count(VerdictKind::kCorrect), 5);
  EXPECT_EQ(count(VerdictKind::kWrongAnswer), 8);
  EXPECT_EQ(count(VerdictKind::kCompileError), 2);
  EXPECT_EQ(count(VerdictKind::kRuntimeError), 1);
  EXPECT_EQ(count(VerdictKind::kParseError), 1);
  EXPECT_EQ(count(VerdictKind::kTimeout), 1);
  EXPECT_EQ(count(VerdictKind::kRejected), 0);
  EXPECT_DOUBLE_EQ(g.counts.generation_ms, 18 * 1000.0);
  EXPECT_DOUBLE_EQ(g.counts.eval_ms, 18 * 50.0);
  EXPECT_DOUBLE_EQ(g.counts.compile_ms, 18 * 100.0);
  EXPECT_EQ(g.tasks[0].counts.turns, 9);
  EXPECT_EQ(g.tasks[1].counts.verdicts[static_cast<size_t>(VerdictKind::kWrongAnswer)], 6);
}

TEST(Metrics, CachedEvaluationsAreNotTimedTwice) {
  std::vector<TurnRow> rows = rows_of(testing::two_task_records());
  rows[1].cached_eval = true;
  rows[2].cached_eval = true;
  const GroupMetrics g = only_group(compute_metrics(rows));
  EXPECT_EQ(g.counts.cached_evals, 2);
  EXPECT_DOUBLE_EQ(g.counts.eval_ms, 16 * 50.0)
      << "a shared verdict's copy of the evaluation time is not added";
  EXPECT_DOUBLE_EQ(g.counts.compile_ms, 16 * 100.0);
  EXPECT_DOUBLE_EQ(g.counts.generation_ms, 18 * 1000.0) << "every turn's generation was its own";
}

// Beam: 0 and 1 start; 2 and 3 continue 0 after its turn 1; 4 continues 2 after its turn 3.
std::vector<Json> beam_records() {
  std::vector<Json> r;
  testing::append(r, trajectory_records("t", "beam", 0, {kWrong, {"correct", 1.5}}));
  testing::append(r, trajectory_records("t", "beam", 1, {kWrong, kWrong}));
  testing::append(r, trajectory_records("t", "beam", 2, {{"correct", 3.0}, kWrong}, 2, 0));
  testing::append(r, trajectory_records("t", "beam", 3, {kWrong, kWrong}, 2, 0));
  testing::append(r, trajectory_records("t", "beam", 4, {kWrong}, 4, 2));
  return r;
}

TEST(Metrics, BeamLineage) {
  const GroupMetrics g = only_group(compute_metrics(rows_of(beam_records())));
  EXPECT_EQ(g.turns, 5);
  EXPECT_EQ(g.counts.turns, 9) << "records are counted once, not once per descendant";
  const TaskMetrics& t = g.tasks.at(0);
  // Samples: 1 (0), 3 (turn 1 of 0: 1.5x), 4 (turn 2 of 2: 3.0x); 0 and 2 live on in them.
  EXPECT_EQ(t.trajectories, 3);
  EXPECT_EQ(t.correct_trajectories, 2);
  EXPECT_NEAR(t.summary.speedup.best, 3.0, kEps);
  EXPECT_NEAR(t.summary.speedup.avg, 1.5, kEps);
  EXPECT_NEAR(t.summary.correct.avg, 2.0 / 3, kEps);
  const std::vector<SerialPoint>& s = t.summary.serial;
  ASSERT_EQ(s.size(), 5u);
  EXPECT_EQ(s[0].speedup.best, 0.0);
  EXPECT_NEAR(s[1].speedup.best, 1.5, kEps) << "turn 1 of trajectory 0, inherited by 3 and 4";
  EXPECT_NEAR(s[1].speedup.avg, 1.0, kEps);
  EXPECT_NEAR(s[2].speedup.best, 3.0, kEps);
  EXPECT_NEAR(s[2].speedup.avg, 1.5, kEps);
}

TEST(Metrics, BranchFromEarlierTurnInheritsOnlyEarlierTurns) {
  std::vector<Json> r;
  testing::append(r, trajectory_records("t", "beam", 0, {kWrong, {"correct", 2.0}, kWrong}));
  testing::append(
      r, trajectory_records("t", "beam", 1, {{"correct", 1.1}}, 1, 0));  // copies turn 0 only
  const TaskMetrics t = only_group(compute_metrics(rows_of(r))).tasks.at(0);
  EXPECT_EQ(t.trajectories, 2) << "0's later turns are not in 1, so 0 stays a sample";
  EXPECT_NEAR(t.summary.speedup.best, 2.0, kEps);
  EXPECT_NEAR(t.summary.speedup.avg, 1.55, kEps)
      << "(2.0 + 1.1) / 2: trajectory 1 does not see 0's turn 1";
}

TEST(Metrics, BrokenLineageInCodeDoesNotCrash) {
  std::vector<TurnRow> rows = rows_of(trajectory_records("t", "beam", 0, {{"correct", 1.0}}));
  rows[0].parent = 9;  // not validated: rows built in code
  const TaskMetrics t = only_group(compute_metrics(rows)).tasks.at(0);
  EXPECT_EQ(t.trajectories, 1);
  EXPECT_NEAR(t.summary.speedup.best, 1.0, kEps);
}

TEST(Metrics, AllocationsAreSeparateInOrderOfAppearance) {
  std::vector<Json> r;
  testing::append(r, trajectory_records("t", "32x4", 0, {{"correct", 1.0}}));
  testing::append(r, trajectory_records("t", "16x8", 0, {kWrong, {"correct", 4.0}}));
  testing::append(r, trajectory_records("t", "32x4", 1, {kWrong}));
  const Metrics m = compute_metrics(rows_of(r));
  ASSERT_EQ(m.groups.size(), 2u);
  EXPECT_EQ(m.groups[0].allocation, "32x4");
  EXPECT_EQ(m.groups[0].turns, 1);
  EXPECT_EQ(m.groups[0].trajectories, 2);
  EXPECT_NEAR(m.groups[0].overall.speedup.avg, 0.5, kEps);
  EXPECT_EQ(m.groups[1].allocation, "16x8");
  EXPECT_EQ(m.groups[1].turns, 2);
  EXPECT_NEAR(m.groups[1].overall.speedup.best, 4.0, kEps);
}

TEST(Metrics, UnequalTrajectoryCountsUseEachTasksOwnAtLargeK) {
  std::vector<Json> r;
  testing::append(
      r, trajectory_records("a", "4x1", 0, {{"correct", 1.0}}));  // a: one trajectory, 1.0x
  for (int i = 0; i < 4; ++i) {
    testing::append(
        r, trajectory_records("b", "4x1", i, {i == 0 ? KernelSpec{"correct", 2.0} : kWrong}));
  }
  const GroupMetrics g = only_group(compute_metrics(rows_of(r)));
  ASSERT_EQ(g.overall.parallel.size(), 4u);
  ASSERT_EQ(g.overall.pass_at_k.size(), 3u);  // k = 1, 2, 4
  EXPECT_EQ(g.overall.pass_at_k[2].k, 4);
  EXPECT_NEAR(g.overall.pass_at_k[0].value, (1.0 + 0.25) / 2, kEps);
  EXPECT_NEAR(g.overall.pass_at_k[2].value, 1.0, kEps);
  EXPECT_NEAR(g.overall.parallel[3].speedup, (1.0 + 2.0) / 2, kEps)
      << "task a contributes its best at every k";
  EXPECT_NEAR(g.overall.parallel[1].speedup, (1.0 + 2.0 * 0.5) / 2, kEps)
      << "b: a 2-subset holds trajectory 0 half the time";
}

TEST(Metrics, CorrectWithoutSpeedupCountsAsSolvedAtZeroSpeedup) {
  std::vector<TurnRow> rows = rows_of(trajectory_records("t", "1x1", 0, {{"correct", 1.0}}));
  rows[0].speedup.reset();
  const GroupMetrics g = only_group(compute_metrics(rows));
  EXPECT_EQ(g.overall.correct.best, 1.0);
  EXPECT_EQ(g.overall.speedup.best, 0.0);
  EXPECT_EQ(g.overall.fast[0].best, 1.0) << "fast_0 is correctness";
  EXPECT_EQ(g.overall.fast[kFast1].best, 0.0);
  EXPECT_EQ(g.solved_tasks, 1);
  EXPECT_EQ(g.geomean_tasks, 0);
  EXPECT_FALSE(g.geomean_speedup.has_value()) << "log 0 is left out";
}

TEST(Metrics, NoRowsNoGroups) {
  EXPECT_TRUE(compute_metrics({}).groups.empty());
  EXPECT_EQ(render_tables(compute_metrics({})), "no turns recorded\n");
}

TEST(Metrics, JsonLayout) {
  const Json j = to_json(compute_metrics(rows_of(testing::two_task_records())));
  EXPECT_EQ(j["schema"], "kevin.metrics.v1");
  const Json& g = j["groups"][0];
  EXPECT_EQ(g["allocation"], "3x3");
  EXPECT_EQ(g["task_count"], 2);
  EXPECT_EQ(g["trajectories"], 6);
  EXPECT_EQ(g["solved_tasks"], 2);
  EXPECT_NEAR(g["geomean_speedup"].get<double>(), 1.0, kEps);
  EXPECT_NEAR(g["overall"]["speedup"]["best"].get<double>(), 1.25, kEps);
  EXPECT_NEAR(g["overall"]["fast"]["1.5"]["avg"].get<double>(), 1.0 / 6, kEps);
  EXPECT_EQ(g["overall"]["pass_at_k"][1]["k"], 2);
  EXPECT_EQ(g["overall"]["serial"].size(), 3u);
  EXPECT_EQ(g["overall"]["serial"][0]["turns"], 1);
  EXPECT_EQ(g["overall"]["parallel"][2]["k"], 3);
  EXPECT_EQ(g["counts"]["verdicts"]["wrong_answer"], 8);
  EXPECT_EQ(g["counts"]["verdicts"]["rejected"], 0);
  EXPECT_EQ(g["tasks"][1]["task"], "lvl/b");
  EXPECT_EQ(g["tasks"][1]["correct_trajectories"], 1);
  EXPECT_TRUE(g["tasks"][1].contains("serial"));
  const Json unsolved =
      to_json(compute_metrics(rows_of(trajectory_records("t", "1x1", 0, {kWrong}))));
  EXPECT_TRUE(unsolved["groups"][0]["geomean_speedup"].is_null());
}

TEST(Metrics, WriteMetricsFileWritesMetricsJson) {
  auto dir = sys::TempDir::create("kevin-report-metrics-");
  ASSERT_TRUE(dir.is_ok());
  const Status no_run = write_metrics_file(dir->path());
  EXPECT_EQ(no_run.code(), StatusCode::kNotFound);
  EXPECT_NE(no_run.message().find("no such file: " + (dir->path() / "trajectories.jsonl").string()),
            std::string::npos)
      << no_run.to_string();
  EXPECT_FALSE(std::filesystem::exists(dir->path() / "metrics.json"));
  ASSERT_TRUE(write_file_atomic(dir->path() / "trajectories.jsonl",
                                testing::jsonl(testing::two_task_records()))
                  .is_ok());
  ASSERT_TRUE(write_metrics_file(dir->path()).is_ok());
  auto text = read_file(dir->path() / "metrics.json");
  ASSERT_TRUE(text.is_ok());
  auto j = parse_json(*text);
  ASSERT_TRUE(j.is_ok());
  EXPECT_EQ(*j, to_json(compute_metrics(rows_of(testing::two_task_records()))));
}

TEST(ReportTables, ShowEverySection) {
  const std::string t = render_tables(compute_metrics(rows_of(testing::two_task_records())));
  for (const char* expected :
       {"allocation 3x3: 2 tasks, 6 trajectories, 3 turns, 18 records",
        "speedup (mean)   1.25x  0.62x", "fast_1.5",
        "solved 2/2 tasks; geometric-mean best speedup 1.00x over 2 tasks",
        "pass@1 50.0%  pass@2 83.3%  pass@3 100.0%", "serial scaling", "parallel scaling",
        "verdicts: parse_error 1 compile_error 2", "lvl/b"}) {
    EXPECT_NE(t.find(expected), std::string::npos) << expected << "\n" << t;
  }
}

}  // namespace
}  // namespace kevin::report
