// token_scores.h — per-token log-probabilities and entropies of a vocabulary-wide softmax, the
// trainer's loss inputs. On CUDA one fused kernel reads the logits once each way (the stock
// path materialises three fp32 copies of the [tokens x vocab] logits and their gradients).
#pragma once

#include <torch/torch.h>

namespace kevin::train {

struct TokenScores {
  torch::Tensor logprobs;  // fp32, differentiable with respect to the logits
  torch::Tensor entropy;   // fp32, no gradient (a metric)
};

// For logits [..., V] (fp32, bf16 or fp16) and targets [...] (int64 ids in [0, V)): the
// log-probability of each target under softmax(logits / temperature) and that distribution's
// entropy, both shaped like targets. temperature <= 0 counts as 1. CUDA tensors of a build
// with the kernels take the fused path, all others the stock ATen ops; both agree to rounding.
TokenScores score_tokens(const torch::Tensor& logits, const torch::Tensor& targets,
                         double temperature);

// Whether this build has the fused CUDA kernels (score_tokens; swiglu.h, rotary.h).
bool fused_kernels_available();

}  // namespace kevin::train
