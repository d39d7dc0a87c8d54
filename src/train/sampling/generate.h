// generate.h — batched sampling from a Qwen2 model with a KV cache: left-padded prompts,
// temperature and top-p, stop tokens, a token limit, and each sampled token's log-probability
// (under the temperature-scaled distribution, the one GRPO's ratios are taken against).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "train/model/qwen2_model.h"

namespace kevin::train {

struct SamplingParams {
  double temperature = 0.9;  // 0: greedy
  double top_p = 1.0;
  int64_t max_new_tokens = 256;
  std::vector<int32_t> stop_ids;  // generation of a sequence ends after one of these
  int32_t pad_id = 0;             // fills prompts on the left; never attended to
};

struct Sampled {
  std::vector<int32_t> tokens;  // generated tokens, the stop token included
  std::vector<float> logprobs;  // one per token
  std::string finish_reason;    // "stop" or "length"
};

// One token per row of `logits` [B, V] under `params` (temperature, top-p; greedy at
// temperature 0 or top_p 0), with its log-probability under the temperature-scaled
// distribution: (tokens [B] int64, logprobs [B] fp32), on the logits' device, without reading
// anything back to the host (no synchronisation with the GPU). On CUDA one fused kernel
// (sampler_kernels.cu: no sort, no fp32 copy of the logits; at top-p, ties at the nucleus's edge
// all stay in), elsewhere sample_tokens_reference. Both draw from torch's generator on the
// logits' device, so torch::manual_seed repeats a run; they draw different streams.
std::pair<torch::Tensor, torch::Tensor> sample_tokens(const torch::Tensor& logits,
                                                      const SamplingParams& params);

// The same in stock ops (sorting for top-p): the CPU path and the kernel's test oracle.
std::pair<torch::Tensor, torch::Tensor> sample_tokens_reference(const torch::Tensor& logits,
                                                                const SamplingParams& params);

// Samples one continuation per prompt (all prompts non-empty). Uses torch's global RNG on
// the model's device (seed it with torch::manual_seed for reproducible runs). Runs without
// gradients.
std::vector<Sampled> generate(Qwen2ForCausalLM& model,
                              const std::vector<std::vector<int32_t>>& prompts,
                              const SamplingParams& params);

}  // namespace kevin::train
