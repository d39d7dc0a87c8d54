// train_bench.cpp — trainer throughput on one GPU: training tokens/s and MFU of a random
// Qwen2 (Qwen2.5-0.5B's shape by default) under bf16 autocast with fp32 AdamW state, and
// batched sampling tokens/s with the KV cache in bf16. Prints one JSON object; run it next
// to bench/train_bench_hf.py (same shapes in HF transformers).
// Usage: train_bench [--quick] [--profile PREFIX]  (Kineto traces PREFIX.train.json of two
// training steps and PREFIX.generate.json of 32 sampled tokens; dev/train/trace_summary.py
// ranks their kernels)
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <set>
#include <string>

#include "bench_shapes.h"
#include "profile.h"
#include "core/json.h"
#include "train/grpo/fused_adamw.h"
#include "train/model/precision.h"
#include "train/model/qwen2_model.h"
#include "train/model/token_scores.h"
#include "train/sampling/generate.h"

namespace {

using kevin::bench::profile;
using kevin::train::Qwen2Config;
using kevin::train::Qwen2ForCausalLM;
constexpr double kH200PeakBf16Flops = 989.4e12;  // dense bf16 tensor-core peak (same as H100 SXM)
constexpr int kGenerateRuns = 3;

double seconds_since(std::chrono::steady_clock::time_point start) {
  torch::cuda::synchronize();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Model FLOPs per trained token: 6 per matmul weight (forward + backward), plus causal
// attention's score and value products counted in full (PaLM's convention: 12 · L · d · T).
double flops_per_token(const Qwen2Config& c, int64_t seq) {
  const double embedding_lookup =
      c.tie_word_embeddings ? 0.0 : static_cast<double>(c.vocab_size * c.hidden_size);
  const double matmul_weights = static_cast<double>(c.parameter_count()) - embedding_lookup;
  return 6.0 * matmul_weights +
         12.0 * static_cast<double>(c.num_hidden_layers * c.hidden_size * seq);
}

// Chrome-trace JSON of `work`, with CUDA kernels.

kevin::Json train(const Qwen2Config& config, int64_t batch, int64_t seq, int steps,
                  const std::string& trace) {
  torch::manual_seed(0);
  Qwen2ForCausalLM model(config);
  model->to(torch::kCUDA);
  kevin::train::FusedAdamW adam(model->parameters(),
                                torch::optim::AdamWOptions(1e-5).weight_decay(0.0));
  const auto ids = torch::randint(0, config.vocab_size, {batch, seq + 1},
                                  torch::TensorOptions(torch::kCUDA).dtype(torch::kLong));
  const std::function<void()> step = [&] {
    kevin::train::Bf16Autocast autocast(true);
    adam.zero_grad();
    const auto logits = model->forward(ids.narrow(1, 0, seq));
    const auto logp = kevin::train::score_tokens(logits, ids.narrow(1, 1, seq), 1.0).logprobs;
    (-logp.mean()).backward();
    adam.step();
  };
  for (int i = 0; i < 3; ++i) step();
  if (!trace.empty()) {
    profile(
        [&] {
          step();
          step();
        },
        trace + ".train.json");
  }
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) step();
  const double elapsed = seconds_since(start);
  const double tokens_per_s = static_cast<double>(batch * seq * steps) / elapsed;
  const double mfu = tokens_per_s * flops_per_token(config, seq) / kH200PeakBf16Flops;
  return {{"batch", batch}, {"seq", seq},
          {"steps", steps}, {"tokens_per_s", tokens_per_s},
          {"mfu", mfu},     {"flops_per_token", flops_per_token(config, seq)}};
}

kevin::Json sample(const Qwen2Config& config, int64_t batch, int64_t prompt_len, int64_t new_tokens,
                   const std::string& trace) {
  torch::manual_seed(0);
  Qwen2ForCausalLM model(config);
  model->to(torch::kCUDA, torch::kBFloat16);
  model->eval();
  std::vector<std::vector<int32_t>> prompts(static_cast<size_t>(batch));
  for (size_t r = 0; r < prompts.size(); ++r) {
    for (int64_t i = 0; i < prompt_len; ++i) {
      prompts[r].push_back(
          static_cast<int32_t>((i * 7919 + static_cast<int64_t>(r) * 104729) % config.vocab_size));
    }
  }
  kevin::train::SamplingParams params;
  params.temperature = 1.0;
  params.max_new_tokens = 16;
  kevin::train::generate(model, prompts, params);  // warm-up
  if (!trace.empty()) {
    params.max_new_tokens = 32;
    profile([&] { kevin::train::generate(model, prompts, params); }, trace + ".generate.json");
  }
  params.max_new_tokens = new_tokens;
  // Several runs, the median reported: single runs of either side varied by ±20%.
  std::vector<double> rates;
  int64_t produced = 0;
  for (int run = 0; run < kGenerateRuns; ++run) {
    const auto start = std::chrono::steady_clock::now();
    const auto out = kevin::train::generate(model, prompts, params);
    const double elapsed = seconds_since(start);
    produced = 0;
    for (const auto& s : out) produced += static_cast<int64_t>(s.tokens.size());
    rates.push_back(static_cast<double>(produced) / elapsed);
  }
  kevin::Json runs = rates;
  std::sort(rates.begin(), rates.end());
  return {
      {"batch", batch},     {"prompt_len", prompt_len},  {"new_tokens", new_tokens},
      {"tokens", produced}, {"runs_tokens_per_s", runs}, {"tokens_per_s", rates[rates.size() / 2]}};
}

}  // namespace

int main(int argc, char** argv) {
  if (!torch::cuda::is_available()) {
    std::fprintf(stderr, "train_bench: needs a CUDA device\n");
    return 2;
  }
  bool quick = false;
  std::string trace;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else if (std::strcmp(argv[i], "--profile") == 0 && i + 1 < argc) {
      trace = argv[++i];
    } else {
      std::fprintf(stderr, "usage: train_bench [--quick] [--profile PREFIX]\n");
      return 2;
    }
  }
  const Qwen2Config config = kevin::bench::qwen25_half_b();
  kevin::Json result = {
      {"model", "random Qwen2, Qwen2.5-0.5B shape"},
      {"parameters", config.parameter_count()},
      {"precision",
       "bf16 autocast, fp32 weights and AdamW state (training); bf16 weights (sampling)"}};
  result["train"] = train(config, quick ? 2 : 8, quick ? 256 : 2048, quick ? 2 : 10, trace);
  result["generate"] = sample(config, quick ? 4 : 32, 128, quick ? 32 : 256, trace);
  std::printf("%s\n", kevin::dump_json(result).c_str());
  return 0;
}
