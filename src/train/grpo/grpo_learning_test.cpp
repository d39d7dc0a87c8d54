// grpo_learning_test.cpp — the learning check of the trainer on CPU: a tiny random Qwen2
// model, a verifiable toy task (reward = share of the 6 generated tokens that are token 7),
// grpo_update with group-normalised advantages and 2 optimizer steps per batch. With a fixed
// seed the mean reward of the last steps must clearly exceed that of the first steps.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <numeric>

#include "train/grpo/grpo_update.h"
#include "train/model/qwen2_model.h"
#include "train/sampling/generate.h"
#include "train/test_configs.h"

namespace kevin::train {
namespace {

constexpr int64_t kGroup = 32, kLength = 6, kSteps = 40;
constexpr int32_t kTarget = 7;

double reward_of(const std::vector<int32_t>& tokens) {
  return static_cast<double>(std::count(tokens.begin(), tokens.end(), kTarget)) /
         static_cast<double>(kLength);
}

TEST(GrpoLearning, RewardRisesOnAToyTask) {
  torch::manual_seed(1234);
  Qwen2ForCausalLM model(tiny_qwen2(12, 32, 64));
  torch::optim::AdamW optimizer(model->parameters(),
                                torch::optim::AdamWOptions(3e-3).weight_decay(0));
  SamplingParams sampling;
  sampling.temperature = 1.0;
  sampling.max_new_tokens = kLength;
  UpdateConfig update;
  update.grpo.norm = LengthNorm::kTokenMean;
  update.grad_clip = 1.0;
  update.micro_batch = 12;  // uneven split: accumulation must still be exact
  const std::vector<int32_t> prompt = {1, 2};
  std::vector<double> mean_rewards;
  for (int64_t step = 0; step < kSteps; ++step) {
    const auto sampled =
        generate(model, std::vector<std::vector<int32_t>>(kGroup, prompt), sampling);
    std::vector<double> rewards;
    for (const auto& s : sampled) rewards.push_back(reward_of(s.tokens));
    const double mean = std::accumulate(rewards.begin(), rewards.end(), 0.0) / kGroup;
    double var = 0;
    for (double r : rewards) var += (r - mean) * (r - mean) / kGroup;
    mean_rewards.push_back(mean);
    std::vector<Sample> batch;
    for (size_t i = 0; i < sampled.size(); ++i) {
      batch.push_back({prompt, sampled[i].tokens, sampled[i].logprobs,
                       (rewards[i] - mean) / (std::sqrt(var) + 1e-6)});
    }
    auto stats = grpo_update(model, optimizer, batch, update);
    ASSERT_TRUE(stats.is_ok()) << stats.status().to_string();
    ASSERT_EQ(stats->size(), 2u);
    EXPECT_EQ(stats->front().clipped_fraction, 0.0) << "the first step's ratios are exactly 1";
  }
  const auto mean_of = [&](size_t begin, size_t end) {
    return std::accumulate(mean_rewards.begin() + static_cast<std::ptrdiff_t>(begin),
                           mean_rewards.begin() + static_cast<std::ptrdiff_t>(end), 0.0) /
           static_cast<double>(end - begin);
  };
  const double first = mean_of(0, 5), last = mean_of(mean_rewards.size() - 5, mean_rewards.size());
  std::cout << "mean reward: first 5 steps " << first << ", last 5 steps " << last << "\n";
  EXPECT_GT(last, first + 0.3) << "mean reward of the first 5 steps " << first << ", of the last 5 "
                               << last;
}

}  // namespace
}  // namespace kevin::train
