// grpo_update.cpp — micro-batch assembly (right padding, completion masks aligned with the
// next-token targets), data-parallel shards and gradient sums, and the optimizer steps.
#include "train/grpo/grpo_update.h"

#include <algorithm>
#include <span>

#include "train/model/chunked_scores.h"
#include "train/model/token_scores.h"

namespace kevin::train {
namespace {

// Right-padded: causal attention keeps padding invisible to real tokens, so no mask is needed.
struct MicroBatch {
  torch::Tensor inputs, targets;     // [N, T-1]
  torch::Tensor mask, old_logprobs;  // [N, T-1]: completion positions of the targets
  torch::Tensor advantages;          // [N]
};

size_t length_of(const Sample& s) { return s.prompt.size() + s.completion.size(); }

MicroBatch assemble(const std::vector<Sample>& samples, std::span<const size_t> picked,
                    int32_t pad_id) {
  size_t longest = 0;
  for (size_t i : picked) longest = std::max(longest, length_of(samples[i]));
  const size_t n = picked.size(), t = longest;
  // Filled on the host in one pass, then wrapped: per-element tensor writes cost a dispatch each.
  std::vector<int64_t> ids(n * t, pad_id);
  std::vector<float> mask(n * (t - 1), 0.0f), old(n * (t - 1), 0.0f), advantages(n);
  for (size_t r = 0; r < n; ++r) {
    const Sample& s = samples[picked[r]];
    std::copy(s.prompt.begin(), s.prompt.end(), ids.begin() + static_cast<std::ptrdiff_t>(r * t));
    std::copy(s.completion.begin(), s.completion.end(),
              ids.begin() + static_cast<std::ptrdiff_t>(r * t + s.prompt.size()));
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
  return {all.narrow(1, 0, cols - 1), all.narrow(1, 1, cols - 1),
          torch::tensor(mask).view({rows, cols - 1}), torch::tensor(old).view({rows, cols - 1}),
          torch::tensor(advantages)};
}

// What one optimizer step adds up over micro-batches (and over the replicas of a group).
struct StepSums {
  double loss = 0, clipped_tokens = 0, kl_tokens = 0, entropy = 0;
};

// Forward and backward over the samples `rows`, `micro` at a time; the gradients accumulate.
StepSums accumulate(Qwen2ForCausalLM& model, const std::vector<Sample>& samples,
                    const std::vector<size_t>& rows, const BatchShape& shape,
                    const UpdateConfig& config) {
  const auto device = model->parameters().front().device();
  StepSums sums;
  for (const std::vector<size_t>& part : plan_micro_batches(samples, rows, config)) {
    const MicroBatch mb = assemble(samples, part, config.pad_id);
    // The LM head only where a completion token is scored: prompts (most of a multi-turn
    // sequence) skip the vocabulary-wide matmul and softmax.
    const auto scored = mb.mask.to(device).to(torch::kBool);
    const auto hidden = model->hidden_states(mb.inputs.to(device)).index({scored});  // [K, hidden]
    const auto targets = mb.targets.to(device).index({scored});
    // One pass over the vocabulary gives the log-probabilities (with gradient) and the entropy;
    // chunked, at most logit_chunk_rows rows of [K, vocab] logits exist at once.
    const TokenScores scores =
        config.logit_chunk_rows > 0
            ? chunked_token_scores(hidden, model->lm_head_weight(), targets, config.temperature,
                                   config.logit_chunk_rows)
            : score_tokens(model->lm_logits(hidden), targets, config.temperature);
    GrpoInputs in;
    in.logprobs = torch::zeros(scored.sizes(), scores.logprobs.options())
                      .index_put({scored}, scores.logprobs);
    in.old_logprobs = mb.old_logprobs.to(device);
    in.ref_logprobs =
        in.old_logprobs;  // no reference model yet: with kl_beta > 0 this is the sampler
    in.advantages = mb.advantages.to(device);
    in.mask = mb.mask.to(device);
    const GrpoLoss loss = grpo_loss(in, config.grpo, shape);
    loss.loss.backward();
    const double tokens = mb.mask.sum().item<double>();
    sums.loss += loss.loss.item<double>();
    sums.clipped_tokens += loss.clipped_fraction * tokens;
    sums.kl_tokens += loss.kl * tokens;
    sums.entropy += scores.entropy.sum().item<double>();
  }
  return sums;
}

// Gradients are summed in buckets of at most this many elements: one collective call per
// bucket instead of per parameter, without a second copy of all gradients at once.
constexpr int64_t kBucketElements = int64_t{1} << 25;

// Replaces every parameter's gradient by its sum over the group. A parameter without a
// gradient (a replica with no samples) takes part as zeros.
Status sum_gradients(const std::vector<torch::Tensor>& params, const ReplicaRank& replica) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> grads;
  for (torch::Tensor p : params) {
    if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
    grads.push_back(p.grad());
  }
  for (size_t begin = 0; begin < grads.size();) {
    size_t end = begin;
    int64_t elements = 0;
    while (end < grads.size() && grads[end].scalar_type() == grads[begin].scalar_type() &&
           (end == begin || elements + grads[end].numel() <= kBucketElements)) {
      elements += grads[end].numel();
      ++end;
    }
    std::vector<torch::Tensor> flat;
    for (size_t i = begin; i < end; ++i) flat.push_back(grads[i].reshape({-1}));
    torch::Tensor bucket = torch::cat(flat);
    KEVIN_RETURN_IF_ERROR(replica.group->all_reduce_sum(replica.rank, bucket));
    int64_t offset = 0;
    for (size_t i = begin; i < end; ++i) {
      grads[i].copy_(bucket.narrow(0, offset, grads[i].numel()).view_as(grads[i]));
      offset += grads[i].numel();
    }
    begin = end;
  }
  return Status::ok();
}

// The step's sums over the group.
Result<StepSums> sum_over_group(const StepSums& mine, torch::Device device,
                                const ReplicaRank& replica) {
  torch::Tensor t =
      torch::tensor({mine.loss, mine.clipped_tokens, mine.kl_tokens, mine.entropy}, torch::kFloat64)
          .to(device);
  KEVIN_RETURN_IF_ERROR(replica.group->all_reduce_sum(replica.rank, t));
  t = t.cpu();
  const double* v = t.data_ptr<double>();
  return StepSums{v[0], v[1], v[2], v[3]};
}

}  // namespace

std::vector<std::vector<size_t>> plan_micro_batches(const std::vector<Sample>& samples,
                                                    const std::vector<size_t>& rows,
                                                    const UpdateConfig& config) {
  std::vector<std::vector<size_t>> out;
  if (config.micro_batch_tokens <= 0) {
    const auto micro = static_cast<size_t>(std::max<int64_t>(1, config.micro_batch));
    for (size_t begin = 0; begin < rows.size(); begin += micro)
      out.emplace_back(
          rows.begin() + static_cast<std::ptrdiff_t>(begin),
          rows.begin() + static_cast<std::ptrdiff_t>(std::min(rows.size(), begin + micro)));
    return out;
  }
  std::vector<size_t> order = rows;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return length_of(samples[a]) > length_of(samples[b]);
  });
  const auto budget = static_cast<size_t>(config.micro_batch_tokens);
  for (size_t i : order) {
    // Longest first: a micro-batch's first row is its longest, so adding a row pads it to that.
    if (out.empty() || (out.back().size() + 1) * length_of(samples[out.back().front()]) > budget)
      out.emplace_back();
    out.back().push_back(i);
  }
  return out;
}

std::vector<size_t> shard_of(const std::vector<Sample>& samples, int rank, int world_size) {
  std::vector<size_t> order(samples.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  if (world_size <= 1) return order;
  const auto length = [&](size_t i) { return length_of(samples[i]); };
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return length(a) > length(b); });
  std::vector<size_t> load(static_cast<size_t>(world_size), 0), mine;
  for (size_t i : order) {
    const auto lightest =
        static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    load[lightest] += length(i);
    if (lightest == static_cast<size_t>(rank)) mine.push_back(i);
  }
  return mine;
}

Result<std::vector<UpdateStats>> grpo_update(Qwen2ForCausalLM& model,
                                             torch::optim::Optimizer& optimizer,
                                             const std::vector<Sample>& samples,
                                             const UpdateConfig& config,
                                             const ReplicaRank& replica) {
  if (samples.empty()) return invalid_argument("grpo_update: no samples");
  BatchShape shape;
  shape.sequences = static_cast<int64_t>(samples.size());
  for (const Sample& s : samples) {
    if (s.prompt.empty() || s.completion.empty() || s.old_logprobs.size() != s.completion.size()) {
      return invalid_argument(
          "grpo_update: a sample needs a prompt, a completion and one log-probability per "
          "completion token");
    }
    shape.tokens += static_cast<int64_t>(s.completion.size());
    shape.max_tokens = std::max(shape.max_tokens, static_cast<int64_t>(s.completion.size()));
  }
  if (config.max_tokens > 0) shape.max_tokens = config.max_tokens;
  const int world_size = replica.group ? replica.group->world_size() : 1;
  const std::vector<size_t> rows = shard_of(samples, replica.rank, world_size);
  const auto params = model->trainable_parameters();
  std::vector<UpdateStats> out;
  for (int step = 0; step < config.optimizer_steps; ++step) {
    optimizer.zero_grad();
    StepSums sums = accumulate(model, samples, rows, shape, config);
    if (replica.group) {
      KEVIN_RETURN_IF_ERROR(sum_gradients(params, replica));
      KEVIN_ASSIGN_OR_RETURN(sums, sum_over_group(sums, params.front().device(), replica));
    }
    UpdateStats stats;
    stats.grad_norm = torch::nn::utils::clip_grad_norm_(params, config.grad_clip);
    optimizer.step();
    stats.loss = sums.loss;
    stats.tokens = shape.tokens;
    stats.clipped_fraction = sums.clipped_tokens / static_cast<double>(shape.tokens);
    stats.entropy = sums.entropy / static_cast<double>(shape.tokens);
    stats.kl = sums.kl_tokens / static_cast<double>(shape.tokens);
    out.push_back(stats);
  }
  return out;
}

}  // namespace kevin::train
