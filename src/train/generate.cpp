// generate.cpp — the sampling loop.
#include "train/generate.h"

#include <algorithm>

namespace kevin::train {
namespace {

// Samples one token per row from `logits` [B, V]; returns (tokens [B], logprobs [B]).
std::pair<torch::Tensor, torch::Tensor> sample(const torch::Tensor& logits, const SamplingParams& p) {
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
    tokens = torch::multinomial(probs, 1).squeeze(-1);
  }
  return {tokens, logprobs.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)};
}

}  // namespace

torch::Tensor token_logprobs(const torch::Tensor& logits, const torch::Tensor& targets, double temperature) {
  const auto scaled = logits.to(torch::kFloat32) / (temperature > 0 ? temperature : 1.0);
  return torch::log_softmax(scaled, -1).gather(-1, targets.unsqueeze(-1)).squeeze(-1);
}

std::vector<Sampled> generate(Qwen2ForCausalLM& model, const std::vector<std::vector<int32_t>>& prompts,
                              const SamplingParams& params) {
  torch::NoGradGuard no_grad;
  const auto device = model->parameters().front().device();
  const auto b = static_cast<int64_t>(prompts.size());
  size_t longest = 0;
  for (const auto& p : prompts) longest = std::max(longest, p.size());
  const auto width = static_cast<int64_t>(longest);
  auto ids = torch::full({b, width}, params.pad_id, torch::kLong);
  auto mask = torch::zeros({b, width}, torch::kLong);
  for (int64_t i = 0; i < b; ++i) {
    const auto& p = prompts[static_cast<size_t>(i)];
    const auto offset = width - static_cast<int64_t>(p.size());
    for (size_t j = 0; j < p.size(); ++j) ids[i][offset + static_cast<int64_t>(j)] = p[j];
    mask.narrow(1, offset, static_cast<int64_t>(p.size())).select(0, i).fill_(1);
  }
  ids = ids.to(device);
  mask = mask.to(device);

  std::vector<Sampled> out(prompts.size());
  std::vector<bool> done(prompts.size(), false);
  KVCache cache;
  auto logits = model->forward(ids, mask, &cache).select(1, width - 1);
  for (int64_t step = 0; step < params.max_new_tokens; ++step) {
    const auto [tokens, logprobs] = sample(logits, params);
    const auto tok_cpu = tokens.to(torch::kCPU), lp_cpu = logprobs.to(torch::kCPU);
    size_t finished = 0;
    for (size_t i = 0; i < out.size(); ++i) {
      if (done[i]) {
        ++finished;
        continue;
      }
      const auto token = static_cast<int32_t>(tok_cpu[static_cast<int64_t>(i)].item<int64_t>());
      out[i].tokens.push_back(token);
      out[i].logprobs.push_back(lp_cpu[static_cast<int64_t>(i)].item<float>());
      if (std::find(params.stop_ids.begin(), params.stop_ids.end(), token) != params.stop_ids.end()) {
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
