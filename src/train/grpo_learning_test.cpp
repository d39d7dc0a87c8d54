// grpo_learning_test.cpp — the learning check of the trainer on CPU: a tiny random Qwen2
// model, a verifiable toy task (reward = share of the 6 generated tokens that are token 7),
// GRPO with group-normalised advantages and 2 optimizer steps per batch. With a fixed seed
// the mean reward of the last steps must clearly exceed that of the first steps.
#include <gtest/gtest.h>

#include <iostream>
#include <numeric>

#include "train/generate.h"
#include "train/grpo.h"
#include "train/qwen2_model.h"
#include "train/test_configs.h"

namespace kevin::train {
namespace {

constexpr int64_t kGroup = 32, kLength = 6, kSteps = 40;
constexpr int32_t kTarget = 7;

double reward_of(const std::vector<int32_t>& tokens) {
  return static_cast<double>(std::count(tokens.begin(), tokens.end(), kTarget)) / static_cast<double>(kLength);
}

TEST(GrpoLearning, RewardRisesOnAToyTask) {
  torch::manual_seed(1234);
  Qwen2ForCausalLM model(tiny_qwen2(12, 32, 64));
  torch::optim::AdamW optimizer(model->parameters(), torch::optim::AdamWOptions(3e-3).weight_decay(0));
  SamplingParams sampling;
  sampling.temperature = 1.0;
  sampling.max_new_tokens = kLength;
  const std::vector<int32_t> prompt = {1, 2};
  std::vector<double> mean_rewards;
  for (int64_t step = 0; step < kSteps; ++step) {
    const auto samples = generate(model, std::vector<std::vector<int32_t>>(kGroup, prompt), sampling);
    std::vector<double> rewards;
    auto seq = torch::zeros({kGroup, 2 + kLength}, torch::kLong);
    auto old = torch::zeros({kGroup, kLength});
    for (int64_t i = 0; i < kGroup; ++i) {
      const auto& s = samples[static_cast<size_t>(i)];
      rewards.push_back(reward_of(s.tokens));
      seq[i][0] = prompt[0];
      seq[i][1] = prompt[1];
      for (int64_t t = 0; t < kLength; ++t) {
        seq[i][2 + t] = s.tokens[static_cast<size_t>(t)];
        old[i][t] = s.logprobs[static_cast<size_t>(t)];
      }
    }
    mean_rewards.push_back(std::accumulate(rewards.begin(), rewards.end(), 0.0) / kGroup);
    auto r = torch::tensor(rewards, torch::kFloat32);
    const auto advantages = (r - r.mean()) / (r.std(false) + 1e-6);
    const BatchShape batch{kGroup, kGroup * kLength, kLength};
    for (int update = 0; update < 2; ++update) {
      optimizer.zero_grad();
      const auto logits = model->forward(seq.narrow(1, 0, 1 + kLength));
      GrpoInputs in;
      in.logprobs = token_logprobs(logits.narrow(1, 1, kLength), seq.narrow(1, 2, kLength), 1.0);
      in.old_logprobs = old;
      in.advantages = advantages;
      in.mask = torch::ones({kGroup, kLength});
      GrpoConfig config;
      config.norm = LengthNorm::kTokenMean;
      grpo_loss(in, config, batch).loss.backward();
      torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
      optimizer.step();
    }
  }
  const auto mean_of = [&](size_t begin, size_t end) {
    return std::accumulate(mean_rewards.begin() + static_cast<std::ptrdiff_t>(begin),
                           mean_rewards.begin() + static_cast<std::ptrdiff_t>(end), 0.0) /
           static_cast<double>(end - begin);
  };
  const double first = mean_of(0, 5), last = mean_of(mean_rewards.size() - 5, mean_rewards.size());
  std::cout << "mean reward: first 5 steps " << first << ", last 5 steps " << last << "\n";
  EXPECT_GT(last, first + 0.3) << "mean reward of the first 5 steps " << first << ", of the last 5 " << last;
}

}  // namespace
}  // namespace kevin::train
