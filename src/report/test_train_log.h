// test_train_log.h — synthetic train_log.jsonl lines for the training-report tests (test-only,
// header-only): a train line with every field the trainer writes, a holdout line whose speedup
// and not-okay ratio are null, and a short log of both.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/json.h"

namespace kevin::report::testing {

// A train line with every field; the reward and learning rate vary with the step.
inline Json train_line(int64_t step, double reward_mean) {
  return {{"kind", "train"},
          {"step", step},
          {"turns", 4},
          {"reward_mean", reward_mean},
          {"correct_rate", 0.5},
          {"response_tokens_mean", 812.5},
          {"clip_ratio", 0.125},
          {"speedup_mean", 1.25},
          {"not_okay_ratio", 0.0625},
          {"loss", -0.0215},
          {"grad_norm", 0.75},
          {"clip_fraction", 0.01},
          {"entropy", 0.45},
          {"kl", 0.002},
          {"lr", 1e-6 * static_cast<double>(step + 1)},
          {"train_tokens_per_s", 5400.0},
          {"gen_tokens_per_s", 21000.0},
          {"rollout_s", 120.0},
          {"sampling_s", 45.0},
          {"update_s", 30.0},
          {"samples", 64},
          {"train_tokens", 52000}};
}

// A holdout line: rollout statistics only; no correct kernel (speedup null), not-okay unknown.
inline Json holdout_line(int64_t step, double reward_mean, double correct_rate) {
  return {{"kind", "holdout"},
          {"step", step},
          {"turns", 4},
          {"reward_mean", reward_mean},
          {"correct_rate", correct_rate},
          {"response_tokens_mean", 700.0},
          {"clip_ratio", 0.0},
          {"speedup_mean", nullptr},
          {"not_okay_ratio", nullptr}};
}

// Train steps 0..steps-1 with reward 0.1 * step; a holdout evaluation before step 0 and after
// every fourth step (rewards 0.2, 0.6, 0.6 ...; correct 10%, 30%, ...).
inline std::vector<Json> train_log_lines(int steps) {
  std::vector<Json> lines = {holdout_line(0, 0.2, 0.1)};
  for (int step = 0; step < steps; ++step) {
    lines.push_back(train_line(step, 0.1 * step));
    if (step % 4 == 3) lines.push_back(holdout_line(step + 1, 0.6, 0.1 + 0.2 * (step + 1) / 4));
  }
  return lines;
}

inline std::string jsonl_of(const std::vector<Json>& lines) {
  std::string text;
  for (const Json& line : lines) text += dump_json(line) + "\n";
  return text;
}

}  // namespace kevin::report::testing
