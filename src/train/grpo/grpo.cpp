// grpo.cpp — the surrogate, the KL estimator and the normalisations.
#include "train/grpo/grpo.h"

namespace kevin::train {

std::optional<LengthNorm> length_norm_from_name(std::string_view name) {
  for (const LengthNormName& n : kLengthNormNames) {
    if (name == n.name) return n.norm;
  }
  return std::nullopt;
}

const char* length_norm_name(LengthNorm norm) {
  for (const LengthNormName& n : kLengthNormNames) {
    if (norm == n.norm) return n.name;
  }
  return "unknown";
}

std::string length_norm_names() {
  std::string out;
  for (size_t i = 0; i < kLengthNormNames.size(); ++i) {
    if (i > 0) out += i + 1 == kLengthNormNames.size() ? " or " : ", ";
    out += kLengthNormNames[i].name;
  }
  return out;
}

GrpoLoss grpo_loss(const GrpoInputs& in, const GrpoConfig& config, const BatchShape& batch) {
  const auto mask = in.mask.to(torch::kFloat32);
  const auto advantages = in.advantages.to(torch::kFloat32).unsqueeze(1);
  const auto ratio = torch::exp(in.logprobs - in.old_logprobs);
  const auto clipped = torch::clamp(ratio, 1.0 - config.clip_low, 1.0 + config.clip_high);
  auto per_token = torch::min(ratio * advantages, clipped * advantages);
  double kl = 0;
  if (config.kl_beta > 0) {
    // k3: exp(ref − logp) − (ref − logp) − 1, unbiased and non-negative.
    const auto d = in.ref_logprobs - in.logprobs;
    const auto k3 = torch::exp(d) - d - 1;
    per_token = per_token - config.kl_beta * k3;
    kl = ((k3 * mask).sum() / mask.sum().clamp_min(1)).item<double>();
  }
  torch::Tensor total;
  switch (config.norm) {
    case LengthNorm::kConstant:
      total = (per_token * mask).sum() / static_cast<double>(batch.sequences * batch.max_tokens);
      break;
    case LengthNorm::kPerSequence:
      total = ((per_token * mask).sum(1) / mask.sum(1).clamp_min(1)).sum() /
              static_cast<double>(batch.sequences);
      break;
    case LengthNorm::kTokenMean:
      total = (per_token * mask).sum() / static_cast<double>(batch.tokens);
      break;
  }
  torch::Tensor loss = -total;
  torch::NoGradGuard no_grad;  // the statistics below are not part of the loss
  const double tokens = std::max(1.0, mask.sum().item<double>());
  const auto was_clipped = (ratio != clipped).to(torch::kFloat32) * mask;
  return {loss, was_clipped.sum().item<double>() / tokens, kl,
          ((ratio * mask).sum().item<double>() / tokens)};
}

}  // namespace kevin::train
