// generate.cpp — the sampling loop.
#include "train/sampling/generate.h"

#include <algorithm>

namespace kevin::train {

std::pair<torch::Tensor, torch::Tensor> sample_tokens(const torch::Tensor& logits,
                                                      const SamplingParams& p) {
  const auto scaled = logits.to(torch::kFloat32) / (p.temperature > 0 ? p.temperature : 1.0);
  const auto logprobs = torch::log_softmax(scaled, -1);
  torch::Tensor tokens;
  if (p.temperature <= 0) {
    tokens = scaled.argmax(-1);
  } else {
    auto probs = logprobs.exp();
    if (p.top_p < 1.0) {
      const auto [sorted, order] = probs.sort(-1, true);
      // Keep the smallest prefix whose mass reaches top_p (the first token always stays).
      const auto drop = (sorted.cumsum(-1) - sorted) >= p.top_p;
      probs = probs.scatter(-1, order, sorted.masked_fill(drop, 0.0));
    }
    // argmax of p / E with E ~ Exp(1) draws index i with probability p_i (what multinomial
    // does for one sample), without multinomial's checks that read the GPU's values back.
    tokens = (probs / torch::empty_like(probs).exponential_(1.0)).argmax(-1);
  }
  return {tokens, logprobs.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)};
}

std::vector<Sampled> generate(Qwen2ForCausalLM& model,
                              const std::vector<std::vector<int32_t>>& prompts,
                              const SamplingParams& params) {
  torch::NoGradGuard no_grad;
  const auto device = model->parameters().front().device();
  const auto b = static_cast<int64_t>(prompts.size());
  size_t longest = 0;
  for (const auto& p : prompts) longest = std::max(longest, p.size());
  const auto width = static_cast<int64_t>(longest);
  // Filled on the host, then moved: per-element tensor writes cost a dispatch each.
  std::vector<int64_t> host_ids(static_cast<size_t>(b * width), params.pad_id),
      host_mask(host_ids.size(), 0);
  for (size_t i = 0; i < prompts.size(); ++i) {
    const auto& p = prompts[i];
    const size_t row = i * static_cast<size_t>(width),
                 offset = static_cast<size_t>(width) - p.size();
    std::copy(p.begin(), p.end(), host_ids.begin() + static_cast<std::ptrdiff_t>(row + offset));
    std::fill_n(host_mask.begin() + static_cast<std::ptrdiff_t>(row + offset), p.size(), 1);
  }
  const auto ids = torch::tensor(host_ids, torch::kLong).view({b, width}).to(device);
  auto mask = torch::tensor(host_mask, torch::kLong).view({b, width}).to(device);

  std::vector<Sampled> out(prompts.size());
  std::vector<bool> done(prompts.size(), false);
  KVCache cache;
  // The head only at the last prompt position: the prompt's other logits are never used.
  auto logits = model->lm_logits(model->hidden_states(ids, mask, &cache).select(1, width - 1));
  for (int64_t step = 0; step < params.max_new_tokens; ++step) {
    const auto [tokens, logprobs] = sample_tokens(logits, params);
    // Read on the host through raw pointers: indexing a tensor per row costs a dispatch each.
    const auto tok_cpu = tokens.to(torch::kCPU).contiguous(),
               lp_cpu = logprobs.to(torch::kCPU).contiguous();
    const int64_t* token_at = tok_cpu.data_ptr<int64_t>();
    const float* logprob_at = lp_cpu.data_ptr<float>();
    size_t finished = 0;
    for (size_t i = 0; i < out.size(); ++i) {
      if (done[i]) {
        ++finished;
        continue;
      }
      const auto token = static_cast<int32_t>(token_at[i]);
      out[i].tokens.push_back(token);
      out[i].logprobs.push_back(logprob_at[i]);
      if (std::find(params.stop_ids.begin(), params.stop_ids.end(), token) !=
          params.stop_ids.end()) {
        out[i].finish_reason = "stop";
        done[i] = true;
        ++finished;
      }
    }
    if (finished == out.size()) break;
    mask = torch::cat({mask, torch::ones({b, 1}, mask.options())}, 1);
    logits = model->forward(tokens.unsqueeze(1), mask, &cache).select(1, 0);
  }
  for (auto& s : out) {
    if (s.finish_reason.empty()) s.finish_reason = "length";
  }
  return out;
}

}  // namespace kevin::train
