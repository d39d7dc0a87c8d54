// paged_generator_test.cpp — the generation engine against today's sampler (generate.h) on a
// tiny model: the same greedy tokens and log-probabilities with batching, preemption, shared
// prompts, a next turn's reuse and stop tokens; sampled tokens that follow the model's
// distribution; clear errors for requests that cannot fit.
#include "train/sampling/paged_generator.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <thread>

#include "train/test_configs.h"

namespace kevin::train {
namespace {

// A tiny model whose logits are spread enough (head scaled up) that greedy ties never occur.
Qwen2ForCausalLM spread_model(uint64_t seed) {
  torch::manual_seed(seed);
  Qwen2ForCausalLM m(tiny_qwen2(50, 32, 48, /*layers=*/2, /*heads=*/4, /*kv_heads=*/2));
  torch::NoGradGuard no_grad;
  m->lm_head->weight.mul_(5);
  m->eval();
  return m;
}

std::unique_ptr<PagedGenerator> engine(
    Qwen2ForCausalLM m, int64_t pool_tokens = 4096, int64_t sync_every = 4,
    std::optional<bool> fuse_weights = std::nullopt,
    const std::function<void(bool, const GeneratorStats&)>& on_turn = {}) {
  PagedGeneratorOptions o;
  o.page_size = 4;
  o.pool_tokens = pool_tokens;
  o.sync_every = sync_every;
  o.fuse_weights = fuse_weights;
  o.on_turn = on_turn;
  auto made = PagedGenerator::create(std::move(m), o);
  EXPECT_TRUE(made.is_ok()) << made.status().to_string();
  return std::move(made).value();
}

SamplingParams greedy(int64_t new_tokens) {
  SamplingParams p;
  p.temperature = 0;
  p.max_new_tokens = new_tokens;
  return p;
}

void expect_same(const std::vector<Sampled>& got, const std::vector<Sampled>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].tokens, want[i].tokens) << "sequence " << i;
    EXPECT_EQ(got[i].finish_reason, want[i].finish_reason) << "sequence " << i;
    ASSERT_EQ(got[i].logprobs.size(), want[i].logprobs.size());
    for (size_t t = 0; t < got[i].logprobs.size(); ++t) {
      EXPECT_NEAR(got[i].logprobs[t], want[i].logprobs[t], 1e-4) << i << "/" << t;
    }
  }
}

const std::vector<std::vector<int32_t>> kPrompts = {
    {3, 4, 5}, {9}, {1, 2, 3, 4, 5, 6, 7}, {8, 7, 6, 5, 4, 3, 2, 1, 9, 10, 11, 12, 13, 14, 15}};

TEST(PagedGenerator, GreedyDecodingEqualsTodaysSampler) {
  auto m = spread_model(1);
  auto g = engine(m);
  const auto got = g->generate(kPrompts, greedy(12));
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  expect_same(*got, generate(m, kPrompts, greedy(12)));
  EXPECT_EQ(g->stats().generated_tokens, 4 * 12);
}

TEST(PagedGenerator, FusedAndModuleDecodeStepsBothGiveTodaysTokensWithAdapters) {
  auto m = spread_model(13);
  LoraConfig lora;
  lora.rank = 4;
  ASSERT_TRUE(m->add_lora(lora).is_ok());
  {
    // B starts at zero: adapters that change the answer.
    torch::NoGradGuard no_grad;
    for (auto& [name, weight] : m->lora_weights()) weight.normal_(0, 0.3);
  }
  const auto want = generate(m, kPrompts, greedy(10));
  for (const bool fuse : {true, false}) {
    auto g = engine(m, 4096, 4, fuse);
    const auto got = g->generate(kPrompts, greedy(10));
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    expect_same(*got, want);
  }
}

TEST(PagedGenerator, AnUpdateInPlaceReachesTheFusedWeights) {
  auto m = spread_model(14);
  auto g = engine(m, 4096, 4, /*fuse_weights=*/true);
  ASSERT_TRUE(g->generate(kPrompts, greedy(6)).is_ok());
  {
    // What an optimizer step does: the same tensors, new values, here in projections the fused
    // form copies (q/k/v and gate/up), changed enough to change the answer.
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < m->model->layers->size(); ++i) {
      auto& layer = *m->model->layers->ptr<DecoderLayerImpl>(i);
      layer.self_attn->v_proj->weight.mul_(4);
      layer.mlp->gate_proj->weight.neg_();
      layer.mlp->up_proj->weight.mul_(3);
    }
  }
  g->clear_prefix_cache();
  const auto got = g->generate(kPrompts, greedy(6));
  ASSERT_TRUE(got.is_ok());
  expect_same(*got, generate(m, kPrompts, greedy(6)));
}

TEST(PagedGenerator, FreshPromptsOfNearLengthsPrefillAsOneBatch) {
  auto m = spread_model(15);
  int turns = 0;
  auto g = engine(m, 4096, /*sync_every=*/8, std::nullopt,
                  [&](bool starting, const GeneratorStats&) { turns += starting ? 1 : 0; });
  const std::vector<std::vector<int32_t>> prompts = {{1, 2, 3, 4, 5, 6, 7, 8, 9},
                                                     {9, 8, 7, 6, 5, 4, 3, 2, 1, 0},
                                                     {11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21}};
  const auto got = g->generate(prompts, greedy(3));
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  expect_same(*got, generate(m, prompts, greedy(3)));
  // One turn admits all three (a prefill each would take three), one decodes their last two.
  EXPECT_EQ(turns, 2);
  EXPECT_EQ(g->stats().prefill_tokens, 9 + 10 + 11);
}

TEST(PagedGenerator, AShortPoolPreemptsAndRecomputesWithoutChangingTheAnswer) {
  auto m = spread_model(2);
  // 40 slots: each request alone fits (at most 15 + 20), all four at once do not.
  auto g = engine(m, /*pool_tokens=*/40);
  const auto got = g->generate(kPrompts, greedy(20));
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  expect_same(*got, generate(m, kPrompts, greedy(20)));
  EXPECT_GT(g->stats().preemptions, 0);
  EXPECT_LE(g->stats().peak_used_pages, 10);
}

TEST(PagedGenerator, IdenticalPromptsArePrefilledOnce) {
  auto m = spread_model(3);
  auto g = engine(m);
  const std::vector<std::vector<int32_t>> same(4, {5, 6, 7, 8, 9, 10, 11, 12, 13});
  const auto got = g->generate(same, greedy(6));
  ASSERT_TRUE(got.is_ok());
  expect_same(*got, generate(m, same, greedy(6)));
  // The first request prefills 9 tokens; each other one only its last (for its logits).
  EXPECT_EQ(g->stats().prefill_tokens, 9 + 3);
  EXPECT_EQ(g->stats().reused_tokens, 3 * 8);
}

TEST(PagedGenerator, ANextTurnReusesThePreviousTurnsTokens) {
  auto m = spread_model(4);
  auto g = engine(m);
  const std::vector<int32_t> first = {2, 4, 6, 8, 10, 12, 14, 16, 18, 20};
  const auto answer = g->generate({first}, greedy(8));
  ASSERT_TRUE(answer.is_ok());
  std::vector<int32_t> second = first;
  second.insert(second.end(), (*answer)[0].tokens.begin(), (*answer)[0].tokens.end());
  second.insert(second.end(), {5, 6, 7});
  const auto before = g->stats();
  const auto got = g->generate({second}, greedy(8));
  ASSERT_TRUE(got.is_ok());
  expect_same(*got, generate(m, {second}, greedy(8)));
  // Stored: the first prompt and all but the last sampled token of its answer.
  EXPECT_EQ(g->stats().reused_tokens - before.reused_tokens, 10 + 8 - 1);
  EXPECT_EQ(g->stats().prefill_tokens - before.prefill_tokens, 1 + 3);
}

TEST(PagedGenerator, AStopTokenInsideADecodeChunkEndsTheSequenceThere) {
  auto m = spread_model(5);
  auto g = engine(m, 4096, /*sync_every=*/8);
  const auto free_run = generate(m, {kPrompts[2]}, greedy(12))[0];
  auto params = greedy(12);
  params.stop_ids = {free_run.tokens[5]};
  const auto got = g->generate({kPrompts[2]}, params);
  ASSERT_TRUE(got.is_ok());
  expect_same(*got, generate(m, {kPrompts[2]}, params));
  EXPECT_EQ((*got)[0].finish_reason, "stop");
  EXPECT_LE((*got)[0].tokens.size(), 6u);
}

TEST(PagedGenerator, RequestsThatStopAtTheirFirstTokenNeverDecode) {
  auto m = spread_model(10);
  auto g = engine(m);
  auto params = greedy(5);
  params.stop_ids = {generate(m, {kPrompts[1]}, params)[0].tokens[0]};
  const auto got = g->generate({kPrompts[1], kPrompts[1]}, params);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  expect_same(*got, generate(m, {kPrompts[1], kPrompts[1]}, params));
  EXPECT_EQ(g->stats().decode_steps, 0);
}

TEST(PagedGenerator, SampledTokensFollowTheModelsDistribution) {
  auto m = spread_model(6);
  PagedGeneratorOptions o;
  o.page_size = 4;
  o.pool_tokens = 1 << 15;
  o.max_batch = 512;
  auto made = PagedGenerator::create(m, o);
  ASSERT_TRUE(made.is_ok());
  const std::vector<int32_t> prompt = {1, 2, 3};
  SamplingParams p;
  p.temperature = 1.0;
  p.max_new_tokens = 2;
  const int kSamples = 4000;
  torch::manual_seed(11);
  const auto got = (*made)->generate(std::vector<std::vector<int32_t>>(kSamples, prompt), p);
  ASSERT_TRUE(got.is_ok());
  // The second token's distribution given the first, against the model's own softmax.
  const auto first_probs = [&](const std::vector<int32_t>& seq) {
    torch::NoGradGuard no_grad;
    const auto input = torch::tensor(std::vector<int64_t>(seq.begin(), seq.end())).unsqueeze(0);
    return torch::softmax(m->forward(input)[0][-1].to(torch::kFloat64), -1);
  };
  const auto expected = first_probs(prompt);
  std::vector<double> seen(50, 0.0);
  for (const auto& s : *got) {
    seen[static_cast<size_t>(s.tokens[0])] += 1.0 / kSamples;
    EXPECT_NEAR(std::exp(s.logprobs[0]), expected[s.tokens[0]].item<double>(), 1e-4);
  }
  double total_variation = 0;
  for (size_t t = 0; t < seen.size(); ++t) {
    total_variation += std::abs(seen[t] - expected[static_cast<int64_t>(t)].item<double>()) / 2;
  }
  // 4000 draws over ~50 tokens: about 0.045 expected; sampling another distribution is ≥ 0.2.
  EXPECT_LT(total_variation, 0.08);
  // The decode step's token after a fixed first token: its log-probability is the model's.
  for (size_t i = 0; i < 20; ++i) {
    std::vector<int32_t> seq = prompt;
    seq.push_back((*got)[i].tokens[0]);
    EXPECT_NEAR(std::exp((*got)[i].logprobs[1]),
                first_probs(seq)[(*got)[i].tokens[1]].item<double>(), 1e-4);
  }
}

TEST(PagedGenerator, TheSameSeedSamplesTheSameTokens) {
  auto m = spread_model(7);
  SamplingParams p;
  p.temperature = 0.9;
  p.top_p = 0.9;
  p.max_new_tokens = 10;
  torch::manual_seed(3);
  const auto a = engine(m)->generate(kPrompts, p);
  torch::manual_seed(3);
  const auto b = engine(m)->generate(kPrompts, p);
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  for (size_t i = 0; i < kPrompts.size(); ++i) EXPECT_EQ((*a)[i].tokens, (*b)[i].tokens);
}

TEST(PagedGenerator, DecodingPausesWhileTheDeviceIsTimedExclusively) {
  DeviceGate gate;
  std::atomic<bool> timing{false};
  std::atomic<int> chunks{0}, chunks_while_timing{0}, chunks_after_timing{0};
  std::atomic<bool> timed{false};
  PagedGeneratorOptions o;
  o.page_size = 4;
  o.pool_tokens = 4096;
  o.sync_every = 2;
  o.gate = &gate;
  o.on_turn = [&](bool starting, const GeneratorStats&) {
    if (starting) return;
    ++chunks;
    if (timing) ++chunks_while_timing;
    if (timed) ++chunks_after_timing;
  };
  auto made = PagedGenerator::create(spread_model(9), o);
  ASSERT_TRUE(made.is_ok());
  std::thread judge([&] {
    while (chunks < 3) std::this_thread::yield();
    {
      // The judge's timing: it gets the device between two chunks, long before the answers end.
      const ExclusiveDeviceLock exclusive(&gate);
      timing = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      timing = false;
    }
    timed = true;
  });
  const auto got = (*made)->generate(kPrompts, greedy(120));
  judge.join();
  ASSERT_TRUE(got.is_ok());
  EXPECT_EQ(chunks_while_timing, 0);
  EXPECT_GT(chunks_after_timing, 0);
}

TEST(PagedGenerator, OnCudaGreedyDecodingEqualsTodaysSamplerFusedOrNotWithAndWithoutGraphs) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  auto m = spread_model(12);
  m->to(torch::kCUDA);
  const auto want = generate(m, kPrompts, greedy(40));
  for (const bool fuse : {true, false}) {
    for (const bool graphs : {false, true}) {
      PagedGeneratorOptions o;
      o.page_size = 4;
      o.pool_tokens = 4096;
      o.cuda_graphs = graphs;
      o.graph_context = 256;
      o.fuse_weights = fuse;
      auto made = PagedGenerator::create(m, o);
      ASSERT_TRUE(made.is_ok());
      // Twice: the second call replays the graphs the first captured.
      for (int call = 0; call < 2; ++call) {
        const auto got = (*made)->generate(kPrompts, greedy(40));
        ASSERT_TRUE(got.is_ok()) << got.status().to_string();
        expect_same(*got, want);
      }
    }
  }
}

TEST(PagedGenerator, RequestsThatCannotFitAreRejectedWithTheSizes) {
  auto g = engine(spread_model(8), /*pool_tokens=*/32);
  const auto empty = g->generate({{}}, greedy(4));
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidArgument);
  const auto too_long = g->generate({{1, 2, 3}}, greedy(30));
  ASSERT_EQ(too_long.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(too_long.status().message().find("33 cache slots"), std::string::npos)
      << too_long.status().message();
  PagedGeneratorOptions bad;
  bad.sync_every = 0;
  EXPECT_EQ(PagedGenerator::create(spread_model(8), bad).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kevin::train
