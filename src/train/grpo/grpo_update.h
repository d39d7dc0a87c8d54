// grpo_update.h — one policy update of GRPO (docs/trainer.md, "GRPO loss"): the sampled completions
// of a rollout batch, with their sampler log-probabilities and advantages, drive `optimizer_steps`
// optimizer steps; each step runs every micro-batch, accumulating exactly the whole batch's
// gradient (the loss normaliser is fixed from the whole batch first), then clips the gradient norm
// and steps the optimizer. Data-parallel: each replica passes the whole batch and its place in the
// group; it runs only its shard of the samples, and the gradients and statistics are summed over
// the group before clipping, so every replica makes the single-device step on the whole batch.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "train/grpo/grpo.h"
#include "train/model/qwen2_model.h"
#include "train/parallel/collective.h"

namespace kevin::train {

// One sampled completion of a prompt.
struct Sample {
  std::vector<int32_t> prompt, completion;  // both non-empty
  std::vector<float> old_logprobs;          // the sampler's, one per completion token
  double advantage = 0;
};

struct UpdateConfig {
  GrpoConfig grpo;
  int optimizer_steps = 2;  // per rollout batch, as in the paper
  int64_t micro_batch = 8;  // sequences per forward/backward
  // > 0: micro-batches by tokens instead (micro_batch is ignored): see plan_micro_batches.
  int64_t micro_batch_tokens = 0;
  // Rows of [rows × vocabulary] logits the loss holds at once (recomputed in backward);
  // 0: every scored token at once.
  int64_t logit_chunk_rows = 2048;
  double grad_clip = 0.05;   // max global L2 norm (the paper's setting)
  double temperature = 1.0;  // the sampling temperature: log-probabilities use the same scaling
  int64_t max_tokens = 0;    // L of the constant normalisation; 0 = the longest completion
  int32_t pad_id = 0;
};

struct UpdateStats {
  double loss = 0;              // summed over micro-batches (the batch loss)
  double grad_norm = 0;         // before clipping
  double clipped_fraction = 0;  // tokens whose ratio was clipped
  double entropy = 0;           // mean entropy of the policy over completion tokens
  double kl = 0;                // mean k3 KL to the reference over completion tokens (0 when off)
  int64_t tokens = 0;
};

// One replica's place in data-parallel training: `group` (borrowed; nullptr: training alone)
// and this replica's rank in it.
struct ReplicaRank {
  Collective* group = nullptr;
  int rank = 0;
};

// The samples replica `rank` of `world_size` runs, as indices into `samples`: the whole batch
// in order when alone; otherwise shards of about equal token counts (longest samples first,
// each to the replica with the fewest tokens so far), which may be empty.
std::vector<size_t> shard_of(const std::vector<Sample>& samples, int rank, int world_size);

// The micro-batches that run `rows` (indices into `samples`), each padded to its longest
// sample. With config.micro_batch_tokens > 0: the rows sorted longest first, each
// micro-batch as many as keep rows × longest (its padded tokens) within the budget, a sample
// longer than the budget alone; sequences of like length share a micro-batch, so little is
// padding, and a long sample never drags short ones to its length. Otherwise config.micro_batch
// rows at a time in order. Every row is in exactly one micro-batch.
std::vector<std::vector<size_t>> plan_micro_batches(const std::vector<Sample>& samples,
                                                    const std::vector<size_t>& rows,
                                                    const UpdateConfig& config);

// Errors: kInvalidArgument for an empty batch or a sample whose lengths disagree; the group's
// errors (a failed or aborted all-reduce). The model's parameters must be the optimizer's.
// Every replica of a group must pass the same samples and config. One UpdateStats per
// optimizer step (the whole batch's, the same on every replica).
Result<std::vector<UpdateStats>> grpo_update(Qwen2ForCausalLM& model,
                                             torch::optim::Optimizer& optimizer,
                                             const std::vector<Sample>& samples,
                                             const UpdateConfig& config,
                                             const ReplicaRank& replica = {});

}  // namespace kevin::train
