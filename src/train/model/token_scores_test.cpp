// token_scores_test.cpp — score_tokens() against log_softmax written out by hand: values,
// entropies and gradients for fp32, and on CUDA the fused kernels for fp32/bf16/fp16 logits,
// temperatures, vocabularies that do and do not allow vector loads, and 3-D inputs.
#include "train/model/token_scores.h"

#include <gtest/gtest.h>

namespace kevin::train {
namespace {

// The definitions, in fp64: log p(target) = x_t/T − logsumexp(x/T); H = −Σ p log p.
TokenScores reference(const torch::Tensor& logits, const torch::Tensor& targets,
                      double temperature) {
  const auto scaled = logits.to(torch::kFloat64) / temperature;
  const auto log_p = scaled - scaled.logsumexp(-1, true);
  return {log_p.gather(-1, targets.unsqueeze(-1)).squeeze(-1), -(log_p.exp() * log_p).sum(-1)};
}

struct Case {
  torch::Device device;
  torch::Dtype dtype;
  int64_t vocab;
  double temperature;
};

std::string describe(const Case& c) {
  return c.device.str() + " " + std::string(c10::toString(c.dtype)) +
         " V=" + std::to_string(c.vocab) + " T=" + std::to_string(c.temperature);
}

void check_case(const Case& c) {
  SCOPED_TRACE(describe(c));
  torch::manual_seed(11);
  const auto base =
      (torch::randn({3, 5, c.vocab}) * 4).to(c.dtype);  // rounded once, shared by both sides
  const auto targets = torch::randint(0, c.vocab, {3, 5}, torch::kLong);
  const auto grad_out = torch::randn({3, 5});

  auto logits = base.to(c.device).clone().requires_grad_();
  const TokenScores got = score_tokens(logits, targets.to(c.device), c.temperature);
  (got.logprobs * grad_out.to(c.device)).sum().backward();
  EXPECT_FALSE(got.entropy.requires_grad());
  ASSERT_EQ(got.logprobs.sizes(), targets.sizes());
  ASSERT_EQ(got.logprobs.scalar_type(), torch::kFloat32);

  auto expected_logits = base.to(torch::kFloat64).requires_grad_();
  const TokenScores expected = reference(expected_logits, targets, c.temperature);
  (expected.logprobs * grad_out.to(torch::kFloat64)).sum().backward();

  // Reduced-precision gradients are rounded once to their type (bf16 keeps 8 mantissa bits).
  const double rtol = c.dtype == torch::kFloat32 ? 1e-5 : (c.dtype == torch::kHalf ? 2e-3 : 1e-2);
  EXPECT_TRUE(
      torch::allclose(got.logprobs.cpu().to(torch::kFloat64), expected.logprobs, 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(got.entropy.cpu().to(torch::kFloat64), expected.entropy, 1e-5, 1e-5));
  const auto grad = logits.grad().cpu().to(torch::kFloat64);
  EXPECT_TRUE(torch::allclose(grad, expected_logits.grad(), rtol, 1e-6))
      << "max gradient difference " << (grad - expected_logits.grad()).abs().max().item<double>();
}

TEST(TokenScores, StockPathMatchesTheDefinition) {
  for (const double t : {1.0, 0.7}) check_case({torch::kCPU, torch::kFloat32, 50, t});
}

TEST(TokenScores, NonPositiveTemperatureCountsAsOne) {
  const auto logits = torch::randn({4, 9});
  const auto targets = torch::randint(0, 9, {4}, torch::kLong);
  EXPECT_TRUE(torch::allclose(score_tokens(logits, targets, 0.0).logprobs,
                              score_tokens(logits, targets, 1.0).logprobs));
}

TEST(TokenScores, FusedKernelsMatchTheDefinition) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  ASSERT_TRUE(fused_kernels_available())
      << "a CUDA build of libtorch, but the kernels were not compiled";
  const torch::Device cuda(torch::kCUDA, 0);
  for (const auto dtype : {torch::kFloat32, torch::kBFloat16, torch::kHalf}) {
    for (const int64_t vocab :
         {4096, 1003, 151936}) {  // vector loads; odd length; Qwen's vocabulary
      for (const double t : {1.0, 0.6}) check_case({cuda, dtype, vocab, t});
    }
  }
}

TEST(TokenScores, FusedKernelsAgreeWithTheStockPathOnExtremeLogits) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  // One dominant logit per row and a row of equal logits: the online maximum must rescale.
  auto logits = torch::zeros({2, 2000});
  logits[0][1999] = 80.0;
  logits[0][3] = -80.0;
  const auto targets = torch::tensor({1999, 5}, torch::kLong);
  const auto fused = score_tokens(logits.to(torch::kCUDA), targets.to(torch::kCUDA), 1.0);
  const auto stock = score_tokens(logits, targets, 1.0);
  EXPECT_TRUE(torch::allclose(fused.logprobs.cpu(), stock.logprobs, 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(fused.entropy.cpu(), stock.entropy, 1e-5, 1e-5));
  EXPECT_NEAR(fused.entropy[1].item<double>(), std::log(2000.0), 1e-4);
}

}  // namespace
}  // namespace kevin::train
