// sampler_test.cpp — sample_tokens: the stock-op reference on the CPU (greedy is the argmax,
// top-p keeps the nucleus), and on the GPU the fused kernel against it: the same greedy tokens
// and log-probabilities over the full 152k vocabulary, draws that follow the tempered and
// truncated distribution (chunks of the vocabulary merged right), the same seed the same
// tokens, and fresh draws on every replay of a CUDA graph.
#include "train/sampling/generate.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#if KEVIN_TRAIN_CUDA_KERNELS
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace kevin::train {
namespace {

constexpr int64_t kQwenVocab = 151936;

SamplingParams params(double temperature, double top_p) {
  SamplingParams p;
  p.temperature = temperature;
  p.top_p = top_p;
  return p;
}

// The distribution sample_tokens draws from for logits row `x` [V]: softmax(x / T), zeroed
// outside the top-p nucleus (tokens with less than top_p of the mass strictly above them),
// renormalised; fp64.
std::vector<double> target_distribution(const torch::Tensor& x, const SamplingParams& p) {
  const auto probs = torch::softmax(x.to(torch::kFloat64) / p.temperature, -1).contiguous();
  const double* q = probs.data_ptr<double>();
  const auto v = static_cast<size_t>(probs.numel());
  std::vector<double> kept(q, q + v);
  double total = 0;
  for (size_t i = 0; i < v; ++i) {
    double above = 0;
    for (size_t j = 0; j < v; ++j) above += q[j] > q[i] ? q[j] : 0;
    if (above >= p.top_p) kept[i] = 0;
    total += kept[i];
  }
  for (double& k : kept) k /= total;
  return kept;
}

// Total variation between the tokens drawn (one per row) and `want`, over the bins bin_of maps
// tokens to (by default each token its own bin).
double total_variation(const torch::Tensor& tokens, const std::vector<double>& want,
                       const std::function<size_t(int64_t)>& bin_of = {}) {
  std::vector<double> seen(want.size(), 0);
  const auto host = tokens.to(torch::kCPU).contiguous();
  const int64_t* t = host.data_ptr<int64_t>();
  for (int64_t i = 0; i < host.numel(); ++i) {
    const size_t bin = bin_of ? bin_of(t[i]) : static_cast<size_t>(t[i]);
    seen[bin] += 1.0 / static_cast<double>(host.numel());
  }
  double tv = 0;
  for (size_t i = 0; i < want.size(); ++i) tv += std::abs(seen[i] - want[i]) / 2;
  return tv;
}

// A skewed row of 40 logits: a few likely tokens and a long tail, so top-p 0.8 drops many.
torch::Tensor skewed_row() {
  return torch::linspace(4.0, -4.0, 40).pow(3) / 16 + torch::linspace(0, 1, 40).sin();
}

TEST(SampleTokens, ReferenceGreedyIsTheArgmaxAndItsLogProbability) {
  const auto logits = torch::randn({5, 300});
  const auto [tokens, logprobs] = sample_tokens_reference(logits, params(0, 1));
  EXPECT_TRUE(torch::equal(tokens, logits.argmax(-1)));
  const auto want = torch::log_softmax(logits, -1).gather(-1, tokens.unsqueeze(-1)).squeeze(-1);
  EXPECT_TRUE(torch::allclose(logprobs, want));
  // top_p 0 keeps only the most likely token too.
  EXPECT_TRUE(torch::equal(sample_tokens_reference(logits, params(0.7, 0)).first, tokens));
}

TEST(SampleTokens, ReferenceDrawsFollowTheTruncatedTemperedDistribution) {
  torch::manual_seed(5);
  const auto row = skewed_row();
  const auto p = params(0.8, 0.8);
  const auto [tokens, logprobs] = sample_tokens_reference(row.expand({20000, 40}), p);
  EXPECT_LT(total_variation(tokens, target_distribution(row, p)), 0.02);
}

#if KEVIN_TRAIN_CUDA_KERNELS

TEST(SampleTokens, CudaGreedyEqualsTheReferenceOverTheFullVocabulary) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  torch::manual_seed(1);
  for (const auto dtype : {torch::kFloat32, torch::kBFloat16}) {
    const auto logits = (torch::randn({33, kQwenVocab}) * 3).to(torch::kCUDA, dtype);
    const auto p = params(0, 1);
    const auto [tokens, logprobs] = sample_tokens(logits, p);
    const auto [want_tokens, want_logprobs] = sample_tokens_reference(logits, p);
    EXPECT_TRUE(torch::equal(tokens, want_tokens)) << dtype;
    EXPECT_LT((logprobs - want_logprobs).abs().max().item<double>(), 1e-4) << dtype;
  }
}

TEST(SampleTokens, CudaDrawsFollowTheTruncatedTemperedDistribution) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  torch::manual_seed(2);
  const auto row = skewed_row();
  for (const double top_p : {1.0, 0.8, 0.3}) {
    const auto p = params(0.8, top_p);
    const auto logits = row.expand({40000, 40}).contiguous().to(torch::kCUDA);
    const auto [tokens, logprobs] = sample_tokens(logits, p);
    // 40,000 draws over at most 40 tokens: about 0.01 expected; a wrong cut is over 0.05.
    EXPECT_LT(total_variation(tokens, target_distribution(row, p)), 0.02) << top_p;
    const auto want = torch::log_softmax(logits.to(torch::kFloat32) / 0.8, -1)
                          .gather(-1, tokens.unsqueeze(-1))
                          .squeeze(-1);
    EXPECT_LT((logprobs - want).abs().max().item<double>(), 1e-5) << top_p;
  }
}

TEST(SampleTokens, CudaDrawsMergeTheChunksOfALargeVocabulary) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  // 12 likely tokens spread over the vocabulary's blocks, the rest far less likely each but,
  // 152k of them, two thirds of the mass.
  torch::manual_seed(3);
  auto row = torch::full({kQwenVocab}, -2.0);
  std::vector<int64_t> hot;
  for (int64_t i = 0; i < 12; ++i) hot.push_back(100 + i * 12345);
  for (size_t i = 0; i < hot.size(); ++i) row[hot[i]] = 8.0 - 0.3 * static_cast<double>(i);
  const auto p = params(1.0, 1.0);
  const auto [tokens, logprobs] =
      sample_tokens(row.expand({20000, kQwenVocab}).to(torch::kCUDA, torch::kBFloat16), p);
  const auto probs = torch::softmax(row.to(torch::kBFloat16).to(torch::kFloat64), -1);
  // Bins: each likely token, then the whole tail.
  std::vector<double> want(hot.size() + 1, 1.0);
  for (size_t i = 0; i < hot.size(); ++i) {
    want[i] = probs[hot[i]].item<double>();
    want.back() -= want[i];
  }
  const auto bin_of = [&](int64_t token) {
    return static_cast<size_t>(std::find(hot.begin(), hot.end(), token) - hot.begin());
  };
  EXPECT_LT(total_variation(tokens, want, bin_of), 0.02);
}

TEST(SampleTokens, CudaTheSameSeedDrawsTheSameTokens) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const auto logits = torch::randn({16, 5000}, torch::kCUDA);
  const auto p = params(1.0, 0.9);
  torch::manual_seed(9);
  const auto a = sample_tokens(logits, p).first;
  const auto again = sample_tokens(logits, p).first;
  torch::manual_seed(9);
  EXPECT_TRUE(torch::equal(sample_tokens(logits, p).first, a));
  EXPECT_FALSE(torch::equal(again, a));  // 16 rows over 5000 tokens: never all equal by chance
}

TEST(SampleTokens, CudaGraphReplaysDrawFreshTokens) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const auto row = skewed_row();
  const auto p = params(0.8, 0.8);
  const auto logits = row.expand({2000, 40}).contiguous().to(torch::kCUDA);
  const auto side = c10::cuda::getStreamFromPool(false, 0);
  at::cuda::CUDAGraph graph;
  torch::Tensor tokens;
  {
    const c10::cuda::CUDAStreamGuard on_side(side);
    sample_tokens(logits, p);  // warm-up outside the capture
    graph.capture_begin();
    tokens = sample_tokens(logits, p).first;
    graph.capture_end();
  }
  std::vector<torch::Tensor> draws;
  for (int replay = 0; replay < 10; ++replay) {
    graph.replay();
    draws.push_back(tokens.clone());
  }
  EXPECT_FALSE(torch::equal(draws[0], draws[1]));
  EXPECT_LT(total_variation(torch::cat(draws), target_distribution(row, p)), 0.02);
}

#endif

}  // namespace
}  // namespace kevin::train
