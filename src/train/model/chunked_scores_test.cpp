// chunked_scores_test.cpp — chunked_token_scores() against the unchunked path (the head's matmul,
// then score_tokens) on the CPU in fp64 and fp32 with ragged chunks: scores, gradients to hidden
// and head, a frozen head, temperatures, no rows, the model's head weight; on CUDA the bf16 and
// autocast paths and the peak memory of a long sequence's backward.
#include "train/model/chunked_scores.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "train/model/precision.h"
#include "train/model/qwen2_model.h"
#include "train/test_configs.h"

#if KEVIN_TRAIN_CUDA_KERNELS
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace kevin::train {
namespace {

// max |got − expected| / max |expected|: the error relative to the tensor's scale (elementwise
// ratios blow up where a gradient entry is near zero).
double relative_difference(const torch::Tensor& got, const torch::Tensor& expected) {
  const auto wide = expected.to(torch::kFloat64).cpu();
  const double scale = wide.abs().max().item<double>();
  const double diff = (got.to(torch::kFloat64).cpu() - wide).abs().max().item<double>();
  return scale > 0 ? diff / scale : diff;
}

struct Problem {
  torch::Tensor hidden, weight, targets, grad_out;
};

// hidden [rows, width], weight [vocab, width] (logits of a few units, as a trained head gives),
// targets and an upstream gradient on the log-probabilities; created on the CPU in fp64 and
// rounded once to `dtype` so both paths see the same numbers.
Problem make_problem(int64_t rows, int64_t width, int64_t vocab, torch::Dtype dtype,
                     torch::Device device) {
  torch::manual_seed(7);
  return {torch::randn({rows, width}, torch::kFloat64).to(dtype).to(device),
          (torch::randn({vocab, width}, torch::kFloat64) * 0.5).to(dtype).to(device),
          torch::randint(0, vocab, {rows}, torch::kLong).to(device),
          torch::randn({rows}).to(device)};
}

struct Result {
  TokenScores scores;
  torch::Tensor grad_hidden, grad_weight;  // undefined where no gradient arrived
};

// Runs a path on fresh leaves (the weight requiring grad when `train_head`) and backpropagates
// Σ logprobs · grad_out.
template <typename Path>
Result run(const Problem& p, bool train_head, Path path) {
  const auto hidden = p.hidden.clone().requires_grad_();
  const auto weight = p.weight.clone().requires_grad_(train_head);
  Result r{path(hidden, weight), {}, {}};
  (r.scores.logprobs * p.grad_out).sum().backward();
  r.grad_hidden = hidden.grad();
  r.grad_weight = weight.grad();
  return r;
}

Result chunked(const Problem& p, bool train_head, double temperature, int64_t chunk_rows) {
  return run(p, train_head, [&](const torch::Tensor& hidden, const torch::Tensor& weight) {
    return chunked_token_scores(hidden, weight, p.targets, temperature, chunk_rows);
  });
}

Result unchunked(const Problem& p, bool train_head, double temperature) {
  return run(p, train_head, [&](const torch::Tensor& hidden, const torch::Tensor& weight) {
    return score_tokens(torch::matmul(hidden, weight.t()), p.targets, temperature);
  });
}

// Every output and gradient of `got` within `tolerance` of `expected` (relative_difference).
void expect_close(const Result& got, const Result& expected, double tolerance) {
  EXPECT_EQ(got.scores.logprobs.scalar_type(), torch::kFloat32);
  EXPECT_EQ(got.scores.entropy.scalar_type(), torch::kFloat32);
  EXPECT_FALSE(got.scores.entropy.requires_grad());
  EXPECT_LE(relative_difference(got.scores.logprobs, expected.scores.logprobs), tolerance);
  EXPECT_LE(relative_difference(got.scores.entropy, expected.scores.entropy), tolerance);
  ASSERT_TRUE(got.grad_hidden.defined());
  EXPECT_EQ(got.grad_hidden.scalar_type(), expected.grad_hidden.scalar_type());
  EXPECT_LE(relative_difference(got.grad_hidden, expected.grad_hidden), tolerance);
  ASSERT_EQ(got.grad_weight.defined(), expected.grad_weight.defined());
  if (expected.grad_weight.defined()) {
    EXPECT_EQ(got.grad_weight.scalar_type(), expected.grad_weight.scalar_type());
    EXPECT_LE(relative_difference(got.grad_weight, expected.grad_weight), tolerance);
  }
}

TEST(ChunkedTokenScores, MatchesTheUnchunkedPathInRaggedChunks) {
  for (const auto dtype : {torch::kFloat64, torch::kFloat32}) {
    for (const double temperature : {1.0, 0.7}) {
      SCOPED_TRACE(std::string(c10::toString(dtype)) + " T=" + std::to_string(temperature));
      // 37 rows in chunks of 8: four full chunks and one of 5.
      const Problem p = make_problem(37, 16, 101, dtype, torch::kCPU);
      expect_close(chunked(p, true, temperature, 8), unchunked(p, true, temperature), 1e-6);
    }
  }
}

TEST(ChunkedTokenScores, EveryChunkSizeGivesTheSameScores) {
  const Problem p = make_problem(37, 16, 101, torch::kFloat64, torch::kCPU);
  const Result expected = unchunked(p, true, 0.9);
  // One row at a time, uneven, exactly K, more than K, and < 1 (all rows at once).
  for (const int64_t chunk_rows : {1, 5, 37, 64, 0, -3}) {
    SCOPED_TRACE("chunk_rows " + std::to_string(chunk_rows));
    expect_close(chunked(p, true, 0.9, chunk_rows), expected, 1e-6);
  }
}

TEST(ChunkedTokenScores, FrozenHeadGetsNoGradientAndHiddenStillDoes) {
  const Problem p = make_problem(37, 16, 101, torch::kFloat32, torch::kCPU);
  const Result got = chunked(p, false, 1.0, 8);
  EXPECT_FALSE(got.grad_weight.defined());
  expect_close(got, unchunked(p, false, 1.0), 1e-6);
}

TEST(ChunkedTokenScores, HeadGetsItsGradientWhenHiddenNeedsNone) {
  const Problem p = make_problem(37, 16, 101, torch::kFloat64, torch::kCPU);
  const auto weight = p.weight.clone().requires_grad_();
  const auto scores = chunked_token_scores(p.hidden, weight, p.targets, 1.0, 8);
  (scores.logprobs * p.grad_out).sum().backward();
  const Result expected = unchunked(p, true, 1.0);
  EXPECT_LE(relative_difference(weight.grad(), expected.grad_weight), 1e-6);
}

TEST(ChunkedTokenScores, NonPositiveTemperatureCountsAsOne) {
  const Problem p = make_problem(37, 16, 101, torch::kFloat32, torch::kCPU);
  for (const double temperature : {0.0, -2.0}) {
    expect_close(chunked(p, true, temperature, 8), chunked(p, true, 1.0, 8), 0.0);
  }
}

TEST(ChunkedTokenScores, NoRowsGiveEmptyScoresAndZeroGradients) {
  const Problem p = make_problem(0, 16, 101, torch::kFloat32, torch::kCPU);
  const Result got = chunked(p, true, 1.0, 8);
  EXPECT_EQ(got.scores.logprobs.sizes(), torch::IntArrayRef({0}));
  EXPECT_EQ(got.scores.entropy.sizes(), torch::IntArrayRef({0}));
  ASSERT_TRUE(got.grad_hidden.defined());
  EXPECT_EQ(got.grad_hidden.sizes(), torch::IntArrayRef({0, 16}));
  ASSERT_TRUE(got.grad_weight.defined());
  EXPECT_EQ(got.grad_weight.sizes(), p.weight.sizes());
  EXPECT_EQ(got.grad_weight.abs().max().item<double>(), 0.0);
}

TEST(ChunkedTokenScores, RejectsShapesThatDoNotFit) {
  const Problem p = make_problem(6, 16, 101, torch::kFloat32, torch::kCPU);
  EXPECT_THROW(chunked_token_scores(p.hidden, p.weight.narrow(1, 0, 8), p.targets, 1.0),
               c10::Error);
  EXPECT_THROW(chunked_token_scores(p.hidden, p.weight, p.targets.narrow(0, 0, 5), 1.0),
               c10::Error);
  EXPECT_THROW(chunked_token_scores(p.hidden.unsqueeze(0), p.weight, p.targets, 1.0), c10::Error);
}

TEST(ChunkedTokenScores, ModelHeadWeightGivesTheModelsScores) {
  for (const bool tied : {false, true}) {
    SCOPED_TRACE(tied ? "tied" : "separate head");
    torch::manual_seed(3);
    Qwen2Config config = tiny_qwen2(50, 32, 48);
    config.tie_word_embeddings = tied;
    Qwen2ForCausalLM model(config);
    const auto& expected_weight =
        tied ? model->model->embed_tokens->weight : model->lm_head->weight;
    EXPECT_TRUE(model->lm_head_weight().is_same(expected_weight));

    const auto hidden = model->hidden_states(torch::randint(0, 50, {2, 9}, torch::kLong))[0];
    const auto targets = torch::randint(0, 50, {9}, torch::kLong);
    const auto got = chunked_token_scores(hidden, model->lm_head_weight(), targets, 1.0, 4);
    const auto expected = score_tokens(model->lm_logits(hidden), targets, 1.0);
    EXPECT_LE(relative_difference(got.logprobs, expected.logprobs), 1e-6);
  }
}

// QwQ-32B's vocabulary (Qwen2.5's checkpoints pad theirs to 151936).
constexpr int64_t kQwqVocab = 152064;

TEST(ChunkedTokenScores, CudaBf16AndAutocastMatchTheUnchunkedFusedPath) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  ASSERT_TRUE(fused_kernels_available())
      << "a CUDA build of libtorch, but the kernels were not compiled";
  const torch::Device cuda(torch::kCUDA, 0);
  // bf16 everywhere (a bf16 model), then fp32 leaves under bf16 autocast (the trainer's fp32
  // master weights): bf16 logits on both paths, gradients in the leaves' dtypes.
  for (const bool autocast : {false, true}) {
    SCOPED_TRACE(autocast ? "fp32 under bf16 autocast" : "bf16");
    const Problem p =
        make_problem(1000, 256, kQwqVocab, autocast ? torch::kFloat32 : torch::kBFloat16, cuda);
    Bf16Autocast scope(autocast);
    // One rounding of a logit or gradient to bf16 is 2^-9 relative; chunks and whole may
    // round a few differently, and the head's gradient adds up in fp32 only when chunked.
    expect_close(chunked(p, true, 0.8, 256), unchunked(p, true, 0.8), 2e-2);
  }
}

#if KEVIN_TRAIN_CUDA_KERNELS
// Bytes the caching allocator held at most while `body` ran, beyond what was allocated before.
template <typename Body>
int64_t peak_bytes_during(Body body) {
  namespace allocator = c10::cuda::CUDACachingAllocator;
  torch::cuda::synchronize();
  // allocated_bytes[0] is the aggregate over pool kinds (StatType::AGGREGATE) in every libtorch.
  const int64_t before = allocator::getDeviceStats(0).allocated_bytes[0].current;
  allocator::resetPeakStats(0);
  body();
  torch::cuda::synchronize();
  return allocator::getDeviceStats(0).allocated_bytes[0].peak - before;
}
#endif

TEST(ChunkedTokenScores, CudaPeakMemoryIsAChunkNotTheSequence) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
#if KEVIN_TRAIN_CUDA_KERNELS
  // A 16k-token sequence of completion tokens, a frozen bf16 head (LoRA), chunks of 1024 rows.
  const int64_t rows = 16384, chunk_rows = 1024;
  const Problem p =
      make_problem(rows, 512, kQwqVocab, torch::kBFloat16, torch::Device(torch::kCUDA, 0));
  const int64_t all_logits = rows * kQwqVocab * 2, chunk_logits = chunk_rows * kQwqVocab * 2;
  const int64_t chunked_peak = peak_bytes_during([&] { chunked(p, false, 1.0, chunk_rows); });
  const int64_t unchunked_peak = peak_bytes_during([&] { unchunked(p, false, 1.0); });
  std::printf(
      "[ peak ] K=%lld V=%lld bf16: chunked (1024 rows) %.3f GiB, unchunked %.3f GiB, "
      "K x V x 2 bytes = %.3f GiB\n",
      static_cast<long long>(rows), static_cast<long long>(kQwqVocab),
      static_cast<double>(chunked_peak) / (1 << 30),
      static_cast<double>(unchunked_peak) / (1 << 30), static_cast<double>(all_logits) / (1 << 30));
  // run()'s copies of the leaves and hidden's gradient, one chunk's logits and their gradient,
  // and small change (scores, cuBLAS's workspace).
  const int64_t leaves = 2 * static_cast<int64_t>(p.hidden.nbytes() + p.weight.nbytes());
  EXPECT_LT(chunked_peak, leaves + 2 * chunk_logits + (int64_t{64} << 20));
  EXPECT_LT(chunked_peak, all_logits / 4);
  EXPECT_GE(unchunked_peak, all_logits);
#else
  FAIL() << "a CUDA build of libtorch, but the kernels (and libc10_cuda) were not built";
#endif
}

}  // namespace
}  // namespace kevin::train
