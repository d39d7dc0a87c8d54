// reward.h — pure functions from verdicts to learning signals (docs/trainer.md, "GRPO loss"; the
// paper, arXiv 2507.11948 §3): the per-kernel score, per-turn returns within a trajectory, and
// advantages over a task's group of turn-samples. No state, no I/O; defaults are the paper's.
#pragma once

#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace kevin::reward {

struct ScoreConfig {
  double correct_bonus = 0.3;         // added for any correct kernel
  std::optional<double> speedup_cap;  // off by default, as in the paper
  // Score the low end of the speedup's 95 % interval rather than the median ratio, so a kernel
  // is not rewarded for a lucky measurement (off by default, as in the paper).
  bool speedup_lower_bound = false;
};

// The speedup a kernel is scored on: `speedup`, or with speedup_lower_bound the interval's low
// end where the judge reported one.
std::optional<double> scored_speedup(std::optional<double> speedup,
                                     std::optional<std::pair<double, double>> interval,
                                     const ScoreConfig& config);

// s = correct_bonus + speedup for a correct kernel (speedup capped if configured), else 0.
// A correct kernel without a measured speedup scores only the bonus.
double kernel_score(bool correct, std::optional<double> speedup, const ScoreConfig& config = {});

enum class ReturnMode {
  kDiscountedSum,  // R_t = Σ_{i≥t} γ^(i−t) s_i   (the paper's choice)
  kDiscountedMax,  // R_t = max_{i≥t} γ^(i−t) s_i
};
std::optional<ReturnMode> return_mode_from_name(std::string_view name);  // "sum" / "max"

// Returns of every turn of one trajectory from its scores, γ in [0, 1].
std::vector<double> turn_returns(const std::vector<double>& scores, double gamma = 0.4,
                                 ReturnMode mode = ReturnMode::kDiscountedSum);

enum class AdvantageMode {
  kGroup,        // (R − mean)/(std + ε) over all m·n turn-samples of the task (the paper's)
  kPerTurn,      // the same, but separately for each turn index across trajectories
  kLeaveOneOut,  // R − mean of the other samples of the group (no scaling)
};
std::optional<AdvantageMode> advantage_mode_from_name(
    std::string_view name);  // "group" / "per_turn" / "leave_one_out"

// Advantages shaped like `returns` ([trajectory][turn]; trajectories may differ in length).
// std is the population standard deviation. A group of one sample gets advantage 0.
std::vector<std::vector<double>> advantages(const std::vector<std::vector<double>>& returns,
                                            AdvantageMode mode = AdvantageMode::kGroup,
                                            double eps = 1e-6);

}  // namespace kevin::reward
