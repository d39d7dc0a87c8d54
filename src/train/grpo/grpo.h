// grpo.h — the GRPO policy loss (docs/trainer.md, "GRPO loss"): a token-level clipped
// surrogate with separate low/high clip ranges, an optional k3 KL penalty against a
// reference policy, and three length normalisations. The normaliser is passed in so that a
// batch split into micro-batches accumulates exactly the gradient of the whole batch.
#pragma once

#include <torch/torch.h>

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace kevin::train {

enum class LengthNorm {
  kConstant,     // Σ l / (sequences · max_tokens)          — Dr. GRPO (the default)
  kPerSequence,  // Σ_i (Σ_t l_i,t / |o_i|) / sequences      — the original GRPO
  kTokenMean,    // Σ l / (tokens in the whole batch)        — DAPO
};
// Each normalisation's name in configs and logs: a new one is an enum value above, a row here
// and its normaliser in grpo_loss.
struct LengthNormName {
  LengthNorm norm;
  const char* name;
};
inline constexpr std::array kLengthNormNames = {
    LengthNormName{LengthNorm::kConstant, "constant"},
    LengthNormName{LengthNorm::kPerSequence, "sequence"},
    LengthNormName{LengthNorm::kTokenMean, "token"}};
// The normalisation named `name` (kLengthNormNames), or none.
std::optional<LengthNorm> length_norm_from_name(std::string_view name);
// `norm`'s name in kLengthNormNames.
const char* length_norm_name(LengthNorm norm);
// "constant, sequence or token": the names for error messages.
std::string length_norm_names();

struct GrpoConfig {
  double clip_low = 0.2;
  double clip_high = 0.28;
  double kl_beta = 0.0;  // 0: no KL term (the paper's setting)
  LengthNorm norm = LengthNorm::kConstant;
};

// One micro-batch: N sequences padded to T completion positions.
struct GrpoInputs {
  torch::Tensor logprobs;      // [N, T] current policy (requires grad)
  torch::Tensor old_logprobs;  // [N, T] policy that sampled the tokens
  torch::Tensor ref_logprobs;  // [N, T] reference policy (only read when kl_beta > 0)
  torch::Tensor advantages;    // [N] one per sequence
  torch::Tensor mask;          // [N, T] 1 for completion tokens, 0 for padding
};

// How the whole batch (all micro-batches of one optimizer step) is sized.
struct BatchShape {
  int64_t sequences = 0;   // across every micro-batch
  int64_t tokens = 0;      // completion tokens across every micro-batch
  int64_t max_tokens = 0;  // the generation limit L (kConstant)
};

struct GrpoLoss {
  torch::Tensor loss;       // scalar; its gradient summed over micro-batches is the batch's
  double clipped_fraction;  // tokens whose ratio was clipped, over this micro-batch's tokens
  double kl;                // mean k3 KL over this micro-batch's tokens (0 when off)
  double ratio_mean;
};

GrpoLoss grpo_loss(const GrpoInputs& in, const GrpoConfig& config, const BatchShape& batch);

}  // namespace kevin::train
