// grpo_update.cpp — micro-batch assembly (right padding, completion masks aligned with the
// next-token targets) and the optimizer steps.
#include "train/grpo_update.h"

#include <algorithm>

#include "train/generate.h"

namespace kevin::train {
namespace {

struct MicroBatch {
  torch::Tensor inputs, attention, targets;  // [N, T-1]
  torch::Tensor mask, old_logprobs;          // [N, T-1]: completion positions of the targets
  torch::Tensor advantages;                  // [N]
};

MicroBatch assemble(const std::vector<Sample>& samples, size_t begin, size_t end, int32_t pad_id) {
  size_t longest = 0;
  for (size_t i = begin; i < end; ++i) longest = std::max(longest, samples[i].prompt.size() + samples[i].completion.size());
  const auto n = static_cast<int64_t>(end - begin), t = static_cast<int64_t>(longest);
  auto ids = torch::full({n, t}, pad_id, torch::kLong);
  auto attention = torch::zeros({n, t}, torch::kLong);
  auto mask = torch::zeros({n, t - 1});
  auto old = torch::zeros({n, t - 1});
  auto advantages = torch::zeros({n});
  for (int64_t r = 0; r < n; ++r) {
    const Sample& s = samples[begin + static_cast<size_t>(r)];
    const auto p = static_cast<int64_t>(s.prompt.size());
    int64_t col = 0;
    for (int32_t id : s.prompt) ids[r][col++] = id;
    for (size_t k = 0; k < s.completion.size(); ++k) {
      ids[r][col] = s.completion[k];
      // The target at column c is token c + 1: completion token k is target p − 1 + k.
      mask[r][p - 1 + static_cast<int64_t>(k)] = 1;
      old[r][p - 1 + static_cast<int64_t>(k)] = s.old_logprobs[k];
      ++col;
    }
    attention.narrow(1, 0, col).select(0, r).fill_(1);
    advantages[r] = s.advantage;
  }
  return {ids.narrow(1, 0, t - 1), attention.narrow(1, 0, t - 1), ids.narrow(1, 1, t - 1), mask, old, advantages};
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
    double clipped_tokens = 0, entropy_sum = 0;
    optimizer.zero_grad();
    for (size_t begin = 0; begin < samples.size(); begin += micro) {
      const MicroBatch mb = assemble(samples, begin, std::min(samples.size(), begin + micro), config.pad_id);
      const auto logits = model->forward(mb.inputs.to(device), mb.attention.to(device));
      GrpoInputs in;
      in.logprobs = token_logprobs(logits, mb.targets.to(device), config.temperature);
      in.old_logprobs = mb.old_logprobs.to(device);
      in.ref_logprobs = in.old_logprobs;  // no reference model yet: with kl_beta > 0 this is the sampler
      in.advantages = mb.advantages.to(device);
      in.mask = mb.mask.to(device);
      const GrpoLoss loss = grpo_loss(in, config.grpo, shape);
      loss.loss.backward();
      const double tokens = mb.mask.sum().item<double>();
      stats.loss += loss.loss.item<double>();
      clipped_tokens += loss.clipped_fraction * tokens;
      {
        torch::NoGradGuard no_grad;
        const auto lp = torch::log_softmax(logits.to(torch::kFloat32) / config.temperature, -1);
        const auto entropy = -(lp.exp() * lp).sum(-1);
        entropy_sum += (entropy * in.mask).sum().item<double>();
      }
    }
    stats.grad_norm = torch::nn::utils::clip_grad_norm_(model->parameters(), config.grad_clip);
    optimizer.step();
    stats.tokens = shape.tokens;
    stats.clipped_fraction = clipped_tokens / static_cast<double>(shape.tokens);
    stats.entropy = entropy_sum / static_cast<double>(shape.tokens);
    out.push_back(stats);
  }
  return out;
}

}  // namespace kevin::train
