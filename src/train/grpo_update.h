// grpo_update.h — one policy update of GRPO (DESIGN.md §7): the sampled completions of a
// rollout batch, with their sampler log-probabilities and advantages, drive
// `optimizer_steps` optimizer steps; each step runs every micro-batch, accumulating exactly
// the whole batch's gradient (the loss normaliser is fixed from the whole batch first), then
// clips the gradient norm and steps the optimizer.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "train/grpo.h"
#include "train/qwen2_model.h"

namespace kevin::train {

// One sampled completion of a prompt.
struct Sample {
  std::vector<int32_t> prompt, completion;  // both non-empty
  std::vector<float> old_logprobs;          // the sampler's, one per completion token
  double advantage = 0;
};

struct UpdateConfig {
  GrpoConfig grpo;
  int optimizer_steps = 2;     // per rollout batch, as in the paper
  int64_t micro_batch = 8;     // sequences per forward/backward
  double grad_clip = 0.05;     // max global L2 norm (the paper's setting)
  double temperature = 1.0;    // the sampling temperature: log-probabilities use the same scaling
  int64_t max_tokens = 0;      // L of the constant normalisation; 0 = the longest completion
  int32_t pad_id = 0;
};

struct UpdateStats {
  double loss = 0;             // summed over micro-batches (the batch loss)
  double grad_norm = 0;        // before clipping
  double clipped_fraction = 0; // tokens whose ratio was clipped
  double entropy = 0;          // mean entropy of the policy over completion tokens
  double kl = 0;               // mean k3 KL to the reference over completion tokens (0 when off)
  int64_t tokens = 0;
};

// Errors: kInvalidArgument for an empty batch or a sample whose lengths disagree. The
// model's parameters must be the optimizer's. One UpdateStats per optimizer step.
Result<std::vector<UpdateStats>> grpo_update(Qwen2ForCausalLM& model, torch::optim::Optimizer& optimizer,
                                             const std::vector<Sample>& samples, const UpdateConfig& config);

}  // namespace kevin::train
