// generate.cpp — the sampling loop.
#include "train/sampling/generate.h"

#include <algorithm>
#include <climits>

#if KEVIN_TRAIN_CUDA_KERNELS
#include "train/model/kernel_launch.h"
#endif

namespace kevin::train {

namespace {

// top_p <= 0 keeps only the most likely token, as greedy decoding does.
bool greedy(const SamplingParams& p) { return p.temperature <= 0 || p.top_p <= 0; }

#if KEVIN_TRAIN_CUDA_KERNELS

bool takes_sampler_kernel(const torch::Tensor& logits) {
  return logits.is_cuda() && logits.dim() == 2 && has_kernel_type(logits) &&
         logits.size(0) <= 65535 && logits.size(1) > 0 && logits.size(1) <= INT_MAX;
}

std::pair<torch::Tensor, torch::Tensor> kernel_sample(const torch::Tensor& logits,
                                                      const SamplingParams& p) {
  const auto x = logits.contiguous();
  const int64_t rows = x.size(0), vocab = x.size(1);
  const auto longs = x.options().dtype(torch::kLong), floats = x.options().dtype(torch::kFloat32);
  // A seed per row from torch's generator: torch::manual_seed repeats a run, and inside a CUDA
  // graph each replay draws fresh ones.
  const auto seeds = greedy(p) ? torch::Tensor() : torch::empty({rows}, longs).random_();
  auto workspace = torch::empty({kernels::sample_workspace_floats(rows, vocab)}, floats);
  auto arrivals = torch::zeros({rows}, x.options().dtype(torch::kInt32));
  auto tokens = torch::empty({rows}, longs), logprobs = torch::empty({rows}, floats);
  const OnDeviceOf on(x);
  check_launch(
      kernels::sample_rows(x.data_ptr(), kernel_type(x), rows, vocab,
                           static_cast<float>(p.temperature > 0 ? 1.0 / p.temperature : 1.0),
                           static_cast<float>(p.top_p), greedy(p),
                           seeds.defined() ? seeds.data_ptr<int64_t>() : nullptr,
                           workspace.data_ptr<float>(), arrivals.data_ptr<int32_t>(),
                           tokens.data_ptr<int64_t>(), logprobs.data_ptr<float>(), on.stream()),
      "sampling");
  return {tokens, logprobs};
}

#endif

}  // namespace

std::pair<torch::Tensor, torch::Tensor> sample_tokens_reference(const torch::Tensor& logits,
                                                                const SamplingParams& p) {
  const auto scaled = logits.to(torch::kFloat32) / (p.temperature > 0 ? p.temperature : 1.0);
  const auto logprobs = torch::log_softmax(scaled, -1);
  torch::Tensor tokens;
  if (greedy(p)) {
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

std::pair<torch::Tensor, torch::Tensor> sample_tokens(const torch::Tensor& logits,
                                                      const SamplingParams& p) {
#if KEVIN_TRAIN_CUDA_KERNELS
  if (takes_sampler_kernel(logits)) return kernel_sample(logits, p);
#endif
  return sample_tokens_reference(logits, p);
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
