// grpo_update.cpp — micro-batch assembly (right padding, completion masks aligned with the
// next-token targets) and the optimizer steps.
#include "train/grpo_update.h"

#include <algorithm>

#include "train/token_scores.h"

namespace kevin::train {
namespace {

// Right-padded: causal attention keeps padding invisible to real tokens, so no mask is needed.
struct MicroBatch {
  torch::Tensor inputs, targets;             // [N, T-1]
  torch::Tensor mask, old_logprobs;          // [N, T-1]: completion positions of the targets
  torch::Tensor advantages;                  // [N]
};

MicroBatch assemble(const std::vector<Sample>& samples, size_t begin, size_t end, int32_t pad_id) {
  size_t longest = 0;
  for (size_t i = begin; i < end; ++i) longest = std::max(longest, samples[i].prompt.size() + samples[i].completion.size());
  const size_t n = end - begin, t = longest;
  // Filled on the host in one pass, then wrapped: per-element tensor writes cost a dispatch each.
  std::vector<int64_t> ids(n * t, pad_id);
  std::vector<float> mask(n * (t - 1), 0.0f), old(n * (t - 1), 0.0f), advantages(n);
  for (size_t r = 0; r < n; ++r) {
    const Sample& s = samples[begin + r];
    std::copy(s.prompt.begin(), s.prompt.end(), ids.begin() + static_cast<std::ptrdiff_t>(r * t));
    std::copy(s.completion.begin(), s.completion.end(), ids.begin() + static_cast<std::ptrdiff_t>(r * t + s.prompt.size()));
    for (size_t k = 0; k < s.completion.size(); ++k) {
      // The target at column c is token c + 1: completion token k is target p − 1 + k.
      const size_t at = r * (t - 1) + s.prompt.size() - 1 + k;
      mask[at] = 1.0f;
      old[at] = s.old_logprobs[k];
    }
    advantages[r] = static_cast<float>(s.advantage);
  }
  const auto rows = static_cast<int64_t>(n), cols = static_cast<int64_t>(t);
  const auto all = torch::tensor(ids, torch::kLong).view({rows, cols});
  return {all.narrow(1, 0, cols - 1), all.narrow(1, 1, cols - 1), torch::tensor(mask).view({rows, cols - 1}),
          torch::tensor(old).view({rows, cols - 1}), torch::tensor(advantages)};
}

}  // namespace

Result<std::vector<UpdateStats>> grpo_update(Qwen2ForCausalLM& model, torch::optim::Optimizer& optimizer,
                                             const std::vector<Sample>& samples, const UpdateConfig& config) {
  if (samples.empty()) return invalid_argument("grpo_update: no samples");
  BatchShape shape;
  shape.sequences = static_cast<int64_t>(samples.size());
  for (const Sample& s : samples) {
    if (s.prompt.empty() || s.completion.empty() || s.old_logprobs.size() != s.completion.size()) {
      return invalid_argument("grpo_update: a sample needs a prompt, a completion and one log-probability per completion token");
    }
    shape.tokens += static_cast<int64_t>(s.completion.size());
    shape.max_tokens = std::max(shape.max_tokens, static_cast<int64_t>(s.completion.size()));
  }
  if (config.max_tokens > 0) shape.max_tokens = config.max_tokens;
  const auto device = model->parameters().front().device();
  const auto micro = static_cast<size_t>(std::max<int64_t>(1, config.micro_batch));
  std::vector<UpdateStats> out;
  for (int step = 0; step < config.optimizer_steps; ++step) {
    UpdateStats stats;
    double clipped_tokens = 0, entropy_sum = 0, kl_sum = 0;
    optimizer.zero_grad();
    for (size_t begin = 0; begin < samples.size(); begin += micro) {
      const MicroBatch mb = assemble(samples, begin, std::min(samples.size(), begin + micro), config.pad_id);
      // The LM head only where a completion token is scored: prompts (most of a multi-turn
      // sequence) skip the vocabulary-wide matmul and softmax.
      const auto scored = mb.mask.to(device).to(torch::kBool);
      const auto hidden = model->hidden_states(mb.inputs.to(device)).index({scored});  // [K, hidden]
      const auto logits = model->lm_logits(hidden);                                     // [K, vocab]
      const auto targets = mb.targets.to(device).index({scored});
      // One pass over the vocabulary gives the log-probabilities (with gradient) and the entropy.
      const TokenScores scores = score_tokens(logits, targets, config.temperature);
      const auto& scored_logprobs = scores.logprobs;
      GrpoInputs in;
      in.logprobs = torch::zeros(scored.sizes(), scored_logprobs.options()).index_put({scored}, scored_logprobs);
      in.old_logprobs = mb.old_logprobs.to(device);
      in.ref_logprobs = in.old_logprobs;  // no reference model yet: with kl_beta > 0 this is the sampler
      in.advantages = mb.advantages.to(device);
      in.mask = mb.mask.to(device);
      const GrpoLoss loss = grpo_loss(in, config.grpo, shape);
      loss.loss.backward();
      const double tokens = mb.mask.sum().item<double>();
      stats.loss += loss.loss.item<double>();
      clipped_tokens += loss.clipped_fraction * tokens;
      kl_sum += loss.kl * tokens;
      entropy_sum += scores.entropy.sum().item<double>();
    }
    stats.grad_norm = torch::nn::utils::clip_grad_norm_(model->trainable_parameters(), config.grad_clip);
    optimizer.step();
    stats.tokens = shape.tokens;
    stats.clipped_fraction = clipped_tokens / static_cast<double>(shape.tokens);
    stats.entropy = entropy_sum / static_cast<double>(shape.tokens);
    stats.kl = kl_sum / static_cast<double>(shape.tokens);
    out.push_back(stats);
  }
  return out;
}

}  // namespace kevin::train
