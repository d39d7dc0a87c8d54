// reward.cpp — scores, discounted returns, normalised advantages.
#include "reward/reward.h"

#include <algorithm>
#include <cmath>

namespace kevin::reward {

std::optional<double> scored_speedup(std::optional<double> speedup,
                                     std::optional<std::pair<double, double>> interval,
                                     const ScoreConfig& config) {
  if (config.speedup_lower_bound && speedup && interval) return interval->first;
  return speedup;
}

double kernel_score(bool correct, std::optional<double> speedup, const ScoreConfig& config) {
  if (!correct) return 0.0;
  double s = speedup.value_or(0.0);
  if (!std::isfinite(s) || s < 0) s = 0.0;
  if (config.speedup_cap) s = std::min(s, *config.speedup_cap);
  return config.correct_bonus + s;
}

std::optional<ReturnMode> return_mode_from_name(std::string_view name) {
  if (name == "sum") return ReturnMode::kDiscountedSum;
  if (name == "max") return ReturnMode::kDiscountedMax;
  return std::nullopt;
}

std::vector<double> turn_returns(const std::vector<double>& scores, double gamma, ReturnMode mode) {
  std::vector<double> r(scores.size());
  double later = 0;  // R_{t+1}
  for (size_t t = scores.size(); t-- > 0;) {
    // Both recurrences: sum R_t = s_t + γ R_{t+1}; max R_t = max(s_t, γ R_{t+1}).
    r[t] = mode == ReturnMode::kDiscountedSum
               ? scores[t] + gamma * later
               : (t + 1 == scores.size() ? scores[t] : std::max(scores[t], gamma * later));
    later = r[t];
  }
  return r;
}

std::optional<AdvantageMode> advantage_mode_from_name(std::string_view name) {
  if (name == "group") return AdvantageMode::kGroup;
  if (name == "per_turn") return AdvantageMode::kPerTurn;
  if (name == "leave_one_out") return AdvantageMode::kLeaveOneOut;
  return std::nullopt;
}

namespace {

// Normalises the samples addressed by `members` ({trajectory, turn}) in place in `out`.
void normalise(const std::vector<std::vector<double>>& returns,
               const std::vector<std::pair<size_t, size_t>>& members, AdvantageMode mode,
               double eps, std::vector<std::vector<double>>* out) {
  const auto n = static_cast<double>(members.size());
  if (members.size() < 2) {
    for (auto [i, t] : members) (*out)[i][t] = 0.0;
    return;
  }
  double sum = 0;
  for (auto [i, t] : members) sum += returns[i][t];
  const double mean = sum / n;
  double var = 0;
  for (auto [i, t] : members) var += (returns[i][t] - mean) * (returns[i][t] - mean);
  const double stdev = std::sqrt(var / n);
  for (auto [i, t] : members) {
    const double r = returns[i][t];
    (*out)[i][t] =
        mode == AdvantageMode::kLeaveOneOut ? r - (sum - r) / (n - 1) : (r - mean) / (stdev + eps);
  }
}

}  // namespace

std::vector<std::vector<double>> advantages(const std::vector<std::vector<double>>& returns,
                                            AdvantageMode mode, double eps) {
  std::vector<std::vector<double>> out(returns.size());
  for (size_t i = 0; i < returns.size(); ++i) out[i].assign(returns[i].size(), 0.0);
  if (mode == AdvantageMode::kPerTurn) {
    size_t turns = 0;
    for (const auto& r : returns) turns = std::max(turns, r.size());
    for (size_t t = 0; t < turns; ++t) {
      std::vector<std::pair<size_t, size_t>> members;
      for (size_t i = 0; i < returns.size(); ++i) {
        if (t < returns[i].size()) members.emplace_back(i, t);
      }
      normalise(returns, members, AdvantageMode::kGroup, eps, &out);
    }
    return out;
  }
  std::vector<std::pair<size_t, size_t>> all;
  for (size_t i = 0; i < returns.size(); ++i) {
    for (size_t t = 0; t < returns[i].size(); ++t) all.emplace_back(i, t);
  }
  normalise(returns, all, mode, eps, &out);
  return out;
}

}  // namespace kevin::reward
