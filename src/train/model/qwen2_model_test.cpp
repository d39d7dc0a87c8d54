// qwen2_model_test.cpp — the decoder on tiny random configs: HF parameter names, causality,
// KV-cache decoding equal to full forwards, left padding invisible, weight loading, and
// generation whose log-probabilities match a training-time recomputation.
#include "train/model/qwen2_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "train/model/token_scores.h"
#include "train/sampling/generate.h"
#include "train/test_configs.h"

namespace kevin::train {
namespace {

Qwen2Config tiny(bool tied = false) {
  Qwen2Config c = tiny_qwen2(50, 32, 48);
  c.tie_word_embeddings = tied;
  return c;
}

torch::Tensor ids(std::vector<int64_t> v) { return torch::tensor(v, torch::kLong).unsqueeze(0); }

TEST(Qwen2Model, HfParameterNamesAndCount) {
  torch::manual_seed(0);
  Qwen2ForCausalLM m(tiny());
  std::set<std::string> names;
  int64_t count = 0;
  for (const auto& [name, t] : m->named_weights()) {
    names.insert(name);
    count += t.numel();
  }
  for (const char* n :
       {"model.embed_tokens.weight", "model.layers.0.self_attn.q_proj.weight",
        "model.layers.0.self_attn.q_proj.bias", "model.layers.1.self_attn.k_proj.bias",
        "model.layers.1.self_attn.v_proj.bias", "model.layers.0.self_attn.o_proj.weight",
        "model.layers.0.mlp.gate_proj.weight", "model.layers.0.mlp.up_proj.weight",
        "model.layers.0.mlp.down_proj.weight", "model.layers.0.input_layernorm.weight",
        "model.layers.0.post_attention_layernorm.weight", "model.norm.weight", "lm_head.weight"}) {
    EXPECT_TRUE(names.count(n)) << n;
  }
  EXPECT_FALSE(names.count("model.layers.0.self_attn.o_proj.bias"));
  EXPECT_EQ(count, tiny().parameter_count());
  Qwen2ForCausalLM tied(tiny(true));
  EXPECT_EQ(tied->named_weights().size(), m->named_weights().size() - 1);
  EXPECT_EQ(tied->forward(ids({1, 2, 3})).sizes(), (std::vector<int64_t>{1, 3, 50}));
}

TEST(Qwen2Model, LaterTokensDoNotChangeEarlierLogits) {
  torch::manual_seed(1);
  Qwen2ForCausalLM m(tiny());
  torch::NoGradGuard g;
  const auto a = m->forward(ids({5, 6, 7, 8, 9}));
  const auto b = m->forward(ids({5, 6, 7, 30, 31}));
  EXPECT_TRUE(torch::allclose(a.narrow(1, 0, 3), b.narrow(1, 0, 3), 1e-6, 1e-6));
  EXPECT_FALSE(torch::allclose(a.narrow(1, 3, 2), b.narrow(1, 3, 2), 1e-3, 1e-3));
}

TEST(Qwen2Model, CachedDecodingEqualsFullForward) {
  torch::manual_seed(2);
  Qwen2ForCausalLM m(tiny());
  torch::NoGradGuard g;
  const auto seq = ids({3, 14, 15, 9, 26, 5, 35});
  const auto full = m->forward(seq);
  KVCache cache;
  auto step = m->forward(seq.narrow(1, 0, 4), {}, &cache);
  EXPECT_TRUE(torch::allclose(step, full.narrow(1, 0, 4), 1e-5, 1e-5));
  for (int64_t t = 4; t < 7; ++t) {
    step = m->forward(seq.narrow(1, t, 1), {}, &cache);
    EXPECT_TRUE(torch::allclose(step.select(1, 0), full.select(1, t), 1e-5, 1e-5))
        << "position " << t;
  }
  EXPECT_EQ(cache.length(), 7);
}

TEST(Qwen2Model, LeftPaddingIsInvisible) {
  torch::manual_seed(3);
  Qwen2ForCausalLM m(tiny());
  torch::NoGradGuard g;
  const auto plain = m->forward(ids({7, 8, 9}));
  const auto padded =
      m->forward(ids({0, 0, 7, 8, 9}), torch::tensor({0, 0, 1, 1, 1}, torch::kLong).unsqueeze(0));
  EXPECT_FALSE(padded.isnan().any().item<bool>());
  EXPECT_TRUE(torch::allclose(padded.narrow(1, 2, 3), plain, 1e-5, 1e-5));
}

TEST(Qwen2Model, LoadsWeightsAndRejectsWrongCheckpoints) {
  torch::manual_seed(4);
  Qwen2ForCausalLM a(tiny()), b(tiny());
  std::map<std::string, torch::Tensor> weights;
  for (const auto& [name, t] : a->named_weights()) weights[name] = t.detach().clone();
  ASSERT_TRUE(b->load_weights(weights).is_ok());
  torch::NoGradGuard g;
  EXPECT_TRUE(torch::equal(a->forward(ids({1, 2, 3})), b->forward(ids({1, 2, 3}))));
  auto missing = weights;
  missing.erase("model.norm.weight");
  auto st = b->load_weights(missing);
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("checkpoint lacks weight model.norm.weight"), std::string::npos)
      << st.to_string();
  auto wrong = weights;
  wrong["model.norm.weight"] = torch::ones({7});
  st = b->load_weights(wrong);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("weight model.norm.weight has shape [7]"), std::string::npos)
      << st.to_string();
  auto extra = weights;
  extra["model.layers.9.mlp.up_proj.weight"] = torch::ones({1});
  st = b->load_weights(extra);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("unexpected weight: model.layers.9.mlp.up_proj.weight"),
            std::string::npos)
      << st.to_string();
}

// Attention with every key/value head copied for its query heads, written out in full.
torch::Tensor expanded_attention(const torch::Tensor& q, const torch::Tensor& k,
                                 const torch::Tensor& v, const torch::Tensor& mask) {
  const int64_t groups = q.size(1) / k.size(1);
  const auto ke = k.repeat_interleave(groups, 1), ve = v.repeat_interleave(groups, 1);
  auto scores = torch::matmul(q, ke.transpose(-2, -1)) / std::sqrt(static_cast<double>(q.size(3)));
  const auto t = q.size(2), s = k.size(2);
  scores =
      mask.defined()
          ? scores + mask
          : scores.masked_fill(torch::ones({t, s}, q.options().dtype(torch::kBool)).triu(s - t + 1),
                               -INFINITY);
  return torch::matmul(torch::softmax(scores, -1), ve);
}

TEST(GroupedAttention, EqualsTheExpandedFormWithAndWithoutAMask) {
  torch::manual_seed(11);
  const auto q = torch::randn({2, 6, 5, 8}), k = torch::randn({2, 2, 5, 8}),
             v = torch::randn({2, 2, 5, 8});
  EXPECT_TRUE(
      torch::allclose(grouped_attention(q, k, v, {}), expanded_attention(q, k, v, {}), 1e-5, 1e-6));
  // A cache longer than the queries, with padding that row 1 may not see.
  const auto kc = torch::randn({2, 2, 9, 8}), vc = torch::randn({2, 2, 9, 8});
  auto mask = torch::zeros({2, 1, 5, 9});
  mask.index_put_({1, 0, torch::indexing::Slice(), 0}, -INFINITY);
  mask.index_put_({torch::indexing::Slice(), 0, 0, 8}, -INFINITY);
  EXPECT_TRUE(torch::allclose(grouped_attention(q, kc, vc, mask),
                              expanded_attention(q, kc, vc, mask), 1e-5, 1e-6));
}

TEST(GroupedAttention, CudaBf16EqualsTheExpandedForm) {
  // On CUDA the mask-free path is SDPA's grouped-query mode (flash kernels); the masked path
  // expands K/V. Both against the fp32 expanded reference, at bf16 tolerance.
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  torch::manual_seed(12);
  const auto bf16 = torch::TensorOptions(torch::kCUDA).dtype(torch::kBFloat16);
  const auto q = torch::randn({2, 40, 64, 128}, bf16), k = torch::randn({2, 8, 64, 128}, bf16),
             v = torch::randn({2, 8, 64, 128}, bf16);
  const auto f32 = [](const torch::Tensor& t) { return t.to(torch::kFloat32); };
  const auto want = expanded_attention(f32(q), f32(k), f32(v), {});
  EXPECT_TRUE(torch::allclose(f32(grouped_attention(q, k, v, {})), want, 2e-2, 2e-2));
  const auto causal =
      torch::zeros({64, 64}, f32(q).options())
          .masked_fill(torch::ones({64, 64}, torch::kBool).triu(1).cuda(), -INFINITY)
          .view({1, 1, 64, 64})
          .expand({2, 1, 64, 64});
  EXPECT_TRUE(torch::allclose(f32(grouped_attention(q, k, v, causal.to(torch::kBFloat16))), want,
                              2e-2, 2e-2));
}

TEST(Qwen2Model, CausalFastPathEqualsTheMaskedPath) {
  torch::manual_seed(3);
  Qwen2ForCausalLM m(tiny());
  const auto x = torch::randint(0, 50, {2, 7}, torch::kLong);
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(
      torch::allclose(m->forward(x), m->forward(x, torch::ones({2, 7}, torch::kLong)), 1e-5, 1e-5));
}

// The sum of squared gradients of a fixed loss, per parameter name.
std::map<std::string, torch::Tensor> gradients(Qwen2ForCausalLM& m, const torch::Tensor& x) {
  m->zero_grad();
  m->forward(x).pow(2).mean().backward();
  std::map<std::string, torch::Tensor> out;
  for (const auto& p : m->named_parameters()) {
    if (p.value().grad().defined()) out[p.key()] = p.value().grad().clone();
  }
  return out;
}

TEST(Qwen2Model, ActivationCheckpointingKeepsTheGradients) {
  torch::manual_seed(4);
  Qwen2ForCausalLM m(tiny());
  const auto x = torch::randint(0, 50, {2, 6}, torch::kLong);
  const auto plain = gradients(m, x);
  m->set_activation_checkpointing(true);
  const auto checkpointed = gradients(m, x);
  ASSERT_EQ(plain.size(), checkpointed.size());
  for (const auto& [name, g] : plain) {
    EXPECT_TRUE(torch::allclose(g, checkpointed.at(name), 1e-5, 1e-7)) << name;
  }
}

TEST(Qwen2Model, CheckpointingGivesAdaptersOnAFrozenBaseTheirGradients) {
  // The embedding is frozen under LoRA, so no checkpointed layer's input needs a gradient;
  // the adapters must get theirs all the same, equal to the plain forward's.
  torch::manual_seed(6);
  Qwen2ForCausalLM m(tiny());
  LoraConfig lora;
  lora.rank = 4;
  ASSERT_TRUE(m->add_lora(lora).is_ok());
  {
    torch::NoGradGuard no_grad;
    for (auto& [name, t] : m->lora_weights()) t.normal_(0.0, 0.1);
  }
  const auto x = torch::randint(0, 50, {2, 6}, torch::kLong);
  const auto plain = gradients(m, x);
  m->set_activation_checkpointing(true);
  const auto checkpointed = gradients(m, x);
  ASSERT_EQ(plain.size(), m->lora_weights().size());
  ASSERT_EQ(checkpointed.size(), plain.size());
  for (const auto& [name, g] : plain) {
    EXPECT_GT(g.abs().sum().item<double>(), 0.0) << name;
    EXPECT_TRUE(torch::allclose(g, checkpointed.at(name), 1e-5, 1e-7)) << name;
  }
}

TEST(Qwen2Model, LoraAdaptersTrainAloneAndMergeExactly) {
  torch::manual_seed(5);
  Qwen2ForCausalLM m(tiny());
  const auto x = torch::randint(0, 50, {1, 6}, torch::kLong);
  torch::Tensor before;
  {
    torch::NoGradGuard no_grad;
    before = m->forward(x);
  }
  Status lora = m->add_lora({0, 16, {"q_proj"}});
  EXPECT_EQ(lora.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(lora.message().find("LoRA rank must be at least 1"), std::string::npos)
      << lora.to_string();
  lora = m->add_lora({4, 16, {"qkv"}});
  EXPECT_EQ(lora.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(lora.message().find("unknown LoRA target module: qkv"), std::string::npos)
      << lora.to_string();
  ASSERT_TRUE(m->add_lora({4, 16, {"q_proj", "down_proj"}}).is_ok());
  lora = m->add_lora({4, 16, {"q_proj"}});
  EXPECT_EQ(lora.code(), StatusCode::kInvalidArgument) << "twice";
  EXPECT_NE(lora.message().find("the model already has LoRA adapters"), std::string::npos)
      << lora.to_string();
  // 2 layers x 2 targets x (A, B), under PEFT's names; only they train.
  const auto adapters = m->lora_weights();
  ASSERT_EQ(adapters.size(), 8u);
  EXPECT_EQ(adapters[0].first, "model.layers.0.self_attn.q_proj.lora_A.weight");
  EXPECT_EQ(adapters[0].second.sizes(), (std::vector<int64_t>{4, 32}));
  EXPECT_EQ(m->trainable_parameters().size(), 8u);
  EXPECT_EQ(m->named_weights().size(), Qwen2ForCausalLM(tiny())->named_weights().size());
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(torch::allclose(m->forward(x), before, 1e-6, 1e-6)) << "B starts at zero";
  for (auto& [name, w] : adapters) w.normal_(0, 0.1);
  const auto adapted = m->forward(x);
  EXPECT_FALSE(torch::allclose(adapted, before, 1e-3, 1e-3));
  std::map<std::string, torch::Tensor> merged;
  for (auto& [name, w] : m->merged_weights()) merged[name] = w;
  Qwen2ForCausalLM plain(tiny());
  ASSERT_TRUE(plain->load_weights(merged).is_ok());
  EXPECT_TRUE(torch::allclose(plain->forward(x), adapted, 1e-4, 1e-5));
}

TEST(Qwen2Model, RotaryAnglesFollowTheConfigTheta) {
  const auto inv_freq = torch::tensor({1.0f, 0.01f});
  const auto [cos, sin] =
      rotary_cos_sin(torch::tensor({0, 2}, torch::kLong).unsqueeze(0), inv_freq, torch::kFloat32);
  EXPECT_NEAR(cos[0][0][0].item<float>(), 1.0, 1e-7);
  EXPECT_NEAR(sin[0][1][0].item<float>(), std::sin(2.0), 1e-6);
  EXPECT_NEAR(sin[0][1][3].item<float>(), std::sin(0.02), 1e-6);  // second half repeats the first
}

TEST(Generate, GreedyMatchesArgmaxAndLogprobsMatchRecomputation) {
  torch::manual_seed(5);
  Qwen2ForCausalLM m(tiny());
  SamplingParams p;
  p.temperature = 0;
  p.max_new_tokens = 6;
  const std::vector<std::vector<int32_t>> prompts = {{4, 5, 6}, {9}};
  const auto out = generate(m, prompts, p);
  ASSERT_EQ(out.size(), 2u);
  torch::NoGradGuard g;
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(out[i].finish_reason, "length");
    ASSERT_EQ(out[i].tokens.size(), 6u);
    std::vector<int64_t> seq(prompts[i].begin(), prompts[i].end());
    for (size_t t = 0; t < out[i].tokens.size(); ++t) {
      const auto logits = m->forward(ids(seq));
      const auto last = logits.select(1, static_cast<int64_t>(seq.size()) - 1);
      EXPECT_EQ(last.argmax(-1).item<int64_t>(), out[i].tokens[t]);
      const auto lp =
          score_tokens(last.unsqueeze(1),
                       torch::tensor({static_cast<int64_t>(out[i].tokens[t])}).unsqueeze(0), 1.0)
              .logprobs;
      EXPECT_NEAR(lp.item<float>(), out[i].logprobs[t], 1e-4);
      seq.push_back(out[i].tokens[t]);
    }
  }
}

TEST(Generate, StopsAtStopTokensAndSamplesWithTopP) {
  torch::manual_seed(6);
  Qwen2ForCausalLM m(tiny());
  SamplingParams greedy;
  greedy.temperature = 0;
  greedy.max_new_tokens = 5;
  const auto first = generate(m, {{1, 2}}, greedy)[0];
  greedy.stop_ids = {first.tokens[1]};
  const auto stopped = generate(m, {{1, 2}}, greedy)[0];
  EXPECT_EQ(stopped.finish_reason, "stop");
  EXPECT_LE(stopped.tokens.size(), 2u);
  EXPECT_EQ(stopped.tokens.back(), first.tokens[1]);
  // top_p → 0 keeps only the most likely token: sampling becomes greedy.
  SamplingParams narrow;
  narrow.temperature = 1.0;
  narrow.top_p = 1e-9;
  narrow.max_new_tokens = 5;
  EXPECT_EQ(generate(m, {{1, 2}}, narrow)[0].tokens, first.tokens);
}

}  // namespace
}  // namespace kevin::train
