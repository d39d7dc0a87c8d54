// grpo_update_test.cpp — grpo_update: micro-batching (with right padding of unequal
// lengths) gives the same update as one batch, the log-probabilities it computes for the
// sampler's own tokens equal the sampler's, and bad samples are errors.
#include "train/grpo/grpo_update.h"

#include <gtest/gtest.h>

#include "train/sampling/generate.h"
#include "train/test_configs.h"

namespace kevin::train {
namespace {

std::vector<Sample> sampled_batch(Qwen2ForCausalLM& model) {
  SamplingParams p;
  p.temperature = 1.0;
  p.max_new_tokens = 5;
  p.stop_ids = {3};  // some completions stop early: unequal lengths
  const std::vector<std::vector<int32_t>> prompts = {
      {1, 2}, {4, 5, 6, 7}, {8}, {9, 10, 11}, {12, 13}};
  const auto out = generate(model, prompts, p);
  std::vector<Sample> batch;
  for (size_t i = 0; i < prompts.size(); ++i) {
    batch.push_back({prompts[i], out[i].tokens, out[i].logprobs, static_cast<double>(i) - 2.0});
  }
  return batch;
}

std::vector<torch::Tensor> updated_params(const std::vector<Sample>& batch, int64_t micro_batch,
                                          int64_t micro_batch_tokens = 0) {
  torch::manual_seed(21);
  Qwen2ForCausalLM model(tiny_qwen2(16, 16, 32));
  torch::optim::SGD sgd(model->parameters(), torch::optim::SGDOptions(0.1));
  UpdateConfig c;
  c.micro_batch = micro_batch;
  c.micro_batch_tokens = micro_batch_tokens;
  c.optimizer_steps = 1;
  c.grad_clip = 1e9;
  auto stats = grpo_update(model, sgd, batch, c);
  EXPECT_TRUE(stats.is_ok());
  EXPECT_EQ(stats->front().clipped_fraction, 0.0);
  std::vector<torch::Tensor> params;
  for (const auto& p : model->parameters()) params.push_back(p.detach().clone());
  return params;
}

TEST(GrpoUpdate, MicroBatchesGiveTheWholeBatchUpdate) {
  torch::manual_seed(21);
  Qwen2ForCausalLM model(tiny_qwen2(16, 16, 32));
  const auto batch = sampled_batch(model);
  const auto whole = updated_params(batch, 5);
  for (int64_t micro : {1, 2, 3}) {
    const auto parts = updated_params(batch, micro);
    ASSERT_EQ(parts.size(), whole.size());
    for (size_t i = 0; i < whole.size(); ++i) {
      EXPECT_TRUE(torch::allclose(parts[i], whole[i], 1e-5, 1e-6))
          << "micro-batch " << micro << ", parameter " << i;
    }
  }
}

TEST(GrpoUpdate, TokenBudgetMicroBatchesGiveThePaddedBatchUpdate) {
  torch::manual_seed(21);
  Qwen2ForCausalLM model(tiny_qwen2(16, 16, 32));
  const auto batch = sampled_batch(model);
  const auto padded = updated_params(batch, 5);
  for (int64_t budget : {1, 9, 16, 40}) {
    const auto budgeted = updated_params(batch, 5, budget);
    for (size_t i = 0; i < padded.size(); ++i) {
      EXPECT_TRUE(torch::allclose(budgeted[i], padded[i], 1e-5, 1e-6))
          << "budget " << budget << ", parameter " << i;
    }
  }
}

Sample of_length(size_t prompt, size_t completion) {
  return {std::vector<int32_t>(prompt, 1), std::vector<int32_t>(completion, 2),
          std::vector<float>(completion, -1.0f), 0.0};
}

TEST(PlanMicroBatches, GroupsLikeLengthsWithinTheTokenBudget) {
  // Lengths 10, 3, 8, 30, 4, 9.
  const std::vector<Sample> samples = {of_length(6, 4),   of_length(1, 2), of_length(4, 4),
                                       of_length(20, 10), of_length(2, 2), of_length(5, 4)};
  const std::vector<size_t> rows = {0, 1, 2, 3, 4, 5};
  UpdateConfig c;
  c.micro_batch_tokens = 24;
  // Longest first: 30 alone (over the budget), then 10 + 9 (2 × 10 = 20; a third would pad to
  // 30), then 8, 4, 3 (3 × 8 = 24).
  const std::vector<std::vector<size_t>> want = {{3}, {0, 5}, {2, 4, 1}};
  EXPECT_EQ(plan_micro_batches(samples, rows, c), want);
  c.micro_batch_tokens = 0;
  c.micro_batch = 4;
  const std::vector<std::vector<size_t>> by_count = {{0, 1, 2, 3}, {4, 5}};
  EXPECT_EQ(plan_micro_batches(samples, rows, c), by_count);
  // A replica's shard plans only its own rows.
  c.micro_batch_tokens = 1000;
  const std::vector<std::vector<size_t>> shard = {{5, 1}};
  EXPECT_EQ(plan_micro_batches(samples, {1, 5}, c), shard);
}

TEST(GrpoUpdate, RatiosStartAtOneAndBadSamplesAreErrors) {
  torch::manual_seed(22);
  Qwen2ForCausalLM model(tiny_qwen2(16, 16, 32));
  auto batch = sampled_batch(model);
  torch::optim::SGD sgd(model->parameters(),
                        torch::optim::SGDOptions(0.0));  // lr 0: the policy stays the sampler
  UpdateConfig c;
  auto stats = grpo_update(model, sgd, batch, c);
  ASSERT_TRUE(stats.is_ok());
  ASSERT_EQ(stats->size(), 2u);
  for (const auto& s : *stats) {
    EXPECT_EQ(s.clipped_fraction, 0.0);
    EXPECT_GT(s.entropy, 0.0);
    EXPECT_GT(s.grad_norm, 0.0);
  }
  auto empty = grpo_update(model, sgd, {}, c);
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(empty.status().message().find("grpo_update: no samples"), std::string::npos)
      << empty.status().to_string();
  batch[0].old_logprobs.pop_back();
  auto short_logprobs = grpo_update(model, sgd, batch, c);
  EXPECT_EQ(short_logprobs.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(short_logprobs.status().message().find("one log-probability per completion token"),
            std::string::npos)
      << short_logprobs.status().to_string();
}

}  // namespace
}  // namespace kevin::train
