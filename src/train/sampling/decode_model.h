// decode_model.h — the generation engine's decode step of a Qwen2 model in few kernels: q/k/v
// and gate/up each one matrix product over concatenated weights (LoRA merged in), the rotary
// and the cache append one kernel, the residual adds folded into the output projections'
// products, and every weight already in the dtype the step computes in.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "train/model/paged_attention.h"
#include "train/model/qwen2_model.h"
#include "train/sampling/kv_pool.h"

namespace kevin::train {

// One decode step's inputs for N sequences, on the model's device.
struct DecodeInputs {
  torch::Tensor tokens;     // [N] int64: each sequence's newest token
  torch::Tensor positions;  // [N] int64: that token's position
  torch::Tensor slots;      // [N] int64: the pool slot its keys and values go to
  // The keys each sequence then attends to, the new token's included (PagedKeys' fields).
  torch::Tensor block_table, lengths;
  int64_t max_length = 0;
};

class DecodeModel {
 public:
  // The step for `model` (a handle, shared) computing in `dtype`. With `fuse`, the weights are
  // prepared as copies: q/k/v and gate/up concatenated, adapters merged, everything cast to
  // `dtype` (copy_bytes(model, dtype) more device memory; tensors that need none of this are
  // shared, not copied). Without, each projection runs as the model's own module (adapters
  // unmerged, inputs cast to its weights' dtype): no copies, more kernels. Torch's allocation
  // errors throw.
  DecodeModel(Qwen2ForCausalLM model, torch::ScalarType dtype, bool fuse);

  // Bytes the fused form's copies would take for `model` in `dtype` (an upper bound: it
  // counts every weight that might be copied).
  static int64_t copy_bytes(const Qwen2ForCausalLM& model, torch::ScalarType dtype);

  // Copies the model's weights again, in place, when any of them changed (an optimizer step, a
  // load) since the copies were made: a CUDA graph that captured the step stays valid. A
  // version check per parameter when none did.
  void refresh();

  // Final-normed hidden states [N, hidden] of one step (dtype); writes each sequence's new keys
  // and values to `pool` (whose dtype may differ from the step's). Runs with autocast off.
  torch::Tensor hidden(const DecodeInputs& in, KVPool& pool);
  // Logits [N, vocab] of `hidden` through the LM head.
  torch::Tensor logits(const torch::Tensor& hidden);

 private:
  // One layer's weights in the fused form.
  struct Layer {
    torch::Tensor input_norm, qkv, qkv_bias, o, post_norm, gate_up, down;
  };
  // Makes (or with `refill`, refreshes in place) the fused form's tensors.
  void prepare(bool refill);
  // Every parameter's (address, version): what refresh() compares.
  std::vector<std::pair<const void*, int64_t>> weight_versions() const;
  torch::Tensor fused_layer(const Layer& w, size_t index, torch::Tensor x, const torch::Tensor& cos,
                            const torch::Tensor& sin, const DecodeInputs& in, KVPool& pool);
  torch::Tensor module_layer(size_t index, torch::Tensor x, const torch::Tensor& cos,
                             const torch::Tensor& sin, const DecodeInputs& in, KVPool& pool);
  // Paged attention of `q` [N, H, D] over layer `index`'s pool: [N, H·D] in the step's dtype.
  torch::Tensor attend(size_t index, const torch::Tensor& q, const DecodeInputs& in,
                       KVPool& pool) const;

  Qwen2ForCausalLM model_;
  torch::ScalarType dtype_;
  bool fuse_;
  std::vector<Layer> layers_;
  torch::Tensor embed_, final_norm_, head_;  // fused form only
  // The attention kernel's counters for the step under way (hidden() makes them; every layer's
  // launch leaves them zero for the next).
  torch::Tensor arrivals_;
  std::vector<std::pair<const void*, int64_t>> versions_;
};

}  // namespace kevin::train
