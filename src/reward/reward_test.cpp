// reward_test.cpp — every formula against hand-computed values, including the paper's worked
// example ([0, 0, 1.30, 2.23] → R = [0.351, 0.877, 2.192, 2.23] with γ = 0.4).
#include "reward/reward.h"

#include <gtest/gtest.h>

#include <cmath>

namespace kevin::reward {
namespace {

TEST(Score, PaperFormula) {
  EXPECT_DOUBLE_EQ(kernel_score(false, 5.0), 0.0);
  EXPECT_DOUBLE_EQ(kernel_score(true, 1.0), 1.3);
  EXPECT_DOUBLE_EQ(kernel_score(true, 9.61), 9.91) << "no cap by default";
  EXPECT_DOUBLE_EQ(kernel_score(true, std::nullopt), 0.3);
  EXPECT_DOUBLE_EQ(kernel_score(true, NAN), 0.3);
  ScoreConfig capped;
  capped.speedup_cap = 3.0;
  EXPECT_DOUBLE_EQ(kernel_score(true, 9.61, capped), 3.3);
}

TEST(Score, TheLowerBoundIsScoredOnlyWhenAskedAndKnown) {
  const std::pair<double, double> interval{1.6, 2.5};
  ScoreConfig paper;
  EXPECT_EQ(scored_speedup(2.0, interval, paper), 2.0) << "the paper scores the median ratio";
  ScoreConfig cautious;
  cautious.speedup_lower_bound = true;
  EXPECT_EQ(scored_speedup(2.0, interval, cautious), 1.6);
  EXPECT_EQ(scored_speedup(2.0, std::nullopt, cautious), 2.0) << "no interval: the median";
  EXPECT_EQ(scored_speedup(std::nullopt, interval, cautious), std::nullopt)
      << "no speedup (not correct): nothing to bound";
  EXPECT_DOUBLE_EQ(kernel_score(true, scored_speedup(2.0, interval, cautious), cautious), 1.9);
}

TEST(Returns, PaperWorkedExample) {
  const auto r = turn_returns({0, 0, 1.30, 2.23}, 0.4);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_NEAR(r[0], 0.35072, 1e-12);
  EXPECT_NEAR(r[1], 0.8768, 1e-12);
  EXPECT_NEAR(r[2], 2.192, 1e-12);
  EXPECT_NEAR(r[3], 2.23, 1e-12);
  EXPECT_NEAR(r[0], 0.351, 5e-4);
  EXPECT_NEAR(r[1], 0.877, 5e-4);
}

TEST(Returns, DiscountedMax) {
  // R_3 = 2.23; R_2 = max(1.3, 0.892) = 1.3; R_1 = max(0, 0.52) = 0.52; R_0 = max(0, 0.208).
  const auto r = turn_returns({0, 0, 1.30, 2.23}, 0.4, ReturnMode::kDiscountedMax);
  EXPECT_NEAR(r[3], 2.23, 1e-12);
  EXPECT_NEAR(r[2], 1.30, 1e-12);
  EXPECT_NEAR(r[1], 0.52, 1e-12);
  EXPECT_NEAR(r[0], 0.208, 1e-12);
  const auto later_best = turn_returns({3.0, 0, 10.0}, 0.5, ReturnMode::kDiscountedMax);
  EXPECT_NEAR(later_best[0], 3.0, 1e-12) << "max(3, 0.25*10)";
  EXPECT_NEAR(later_best[1], 5.0, 1e-12);
  EXPECT_TRUE(turn_returns({}, 0.4).empty());
  EXPECT_EQ(return_mode_from_name("max"), ReturnMode::kDiscountedMax);
  EXPECT_FALSE(return_mode_from_name("mean").has_value());
}

TEST(Advantages, GroupOverAllTurnSamples) {
  // Samples 1, 2, 3, 4, 5, 9: mean 4, squared deviations 9+4+1+0+1+25 = 40, std sqrt(40/6).
  const std::vector<std::vector<double>> R = {{1, 2, 3}, {4, 5, 9}};
  const auto a = advantages(R, AdvantageMode::kGroup, 0.0);
  const double sd = std::sqrt(40.0 / 6.0);
  EXPECT_NEAR(a[0][0], (1 - 4) / sd, 1e-12);
  EXPECT_NEAR(a[1][2], (9 - 4) / sd, 1e-12);
  double total = 0;
  for (const auto& row : a)
    for (double v : row) total += v;
  EXPECT_NEAR(total, 0.0, 1e-12);
}

TEST(Advantages, PerTurnIndex) {
  const std::vector<std::vector<double>> R = {{1, 10}, {3, 20}, {5}};
  const auto a = advantages(R, AdvantageMode::kPerTurn, 0.0);
  const double sd0 = std::sqrt(8.0 / 3.0);  // turn 0: 1, 3, 5 (mean 3)
  EXPECT_NEAR(a[0][0], -2 / sd0, 1e-12);
  EXPECT_NEAR(a[2][0], 2 / sd0, 1e-12);
  EXPECT_NEAR(a[0][1], -1.0, 1e-12);  // turn 1: 10, 20 (mean 15, std 5)
  EXPECT_NEAR(a[1][1], 1.0, 1e-12);
}

TEST(Advantages, LeaveOneOut) {
  const std::vector<std::vector<double>> R = {{1, 2}, {6}};
  const auto a = advantages(R, AdvantageMode::kLeaveOneOut);
  EXPECT_NEAR(a[0][0], 1 - (2 + 6) / 2.0, 1e-12);
  EXPECT_NEAR(a[0][1], 2 - (1 + 6) / 2.0, 1e-12);
  EXPECT_NEAR(a[1][0], 6 - (1 + 2) / 2.0, 1e-12);
}

TEST(Advantages, DegenerateGroups) {
  EXPECT_DOUBLE_EQ(advantages({{5}})[0][0], 0.0) << "one sample: nothing to compare with";
  const auto same = advantages({{2, 2}, {2, 2}});
  for (const auto& row : same)
    for (double v : row) EXPECT_DOUBLE_EQ(v, 0.0);
  EXPECT_TRUE(advantages({}).empty());
  EXPECT_EQ(advantage_mode_from_name("per_turn"), AdvantageMode::kPerTurn);
  EXPECT_FALSE(advantage_mode_from_name("global").has_value());
}

}  // namespace
}  // namespace kevin::reward
