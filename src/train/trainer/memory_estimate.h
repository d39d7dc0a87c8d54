// memory_estimate.h — what one replica needs on its device to train a Qwen2 config: model
// state (base weights, trainable weights, gradients, AdamW), the update's activations and
// log-probability logits, and the generation KV cache. `kevin train --dry-run` prints it;
// bench/train_32b.cpp checks it against the measured peak (docs/trainer.md, "Memory").
#pragma once

#include <cstdint>

#include "train/model/qwen2_config.h"
#include "train/model/qwen2_model.h"

namespace kevin::train {

// The work that sizes the activations and the cache. Zero sizes leave that part out.
struct Workload {
  int base_bytes = 4;                // bytes per base weight and activation element (bf16: 2)
  bool checkpointing = false;        // per-layer activation checkpoints
  int64_t micro_batch_tokens = 0;    // padded tokens of the largest update micro-batch
  int64_t scored_tokens = 0;         // completion tokens scored in that micro-batch
  int64_t logit_chunk_rows = 0;      // rows of logits alive at once in the loss; 0: all scored
  int64_t generation_sequences = 0;  // sequences sampled at once
  int64_t generation_tokens = 0;     // prompt + answer tokens of each
  bool optimizer_on_host = false;    // AdamW's moments in host memory (optimizer.state_on_host)
};

struct MemoryEstimate {
  int64_t parameters = 0;         // the model's
  int64_t trainable = 0;          // LoRA adapters, or every parameter for full fine-tuning
  double weights_gib = 0;         // base weights at base_bytes, plus fp32 adapters
  double gradients_gib = 0;       // fp32, trainable parameters only
  double optimizer_gib = 0;       // AdamW's two fp32 moments on the device (0 when on the host)
  double host_optimizer_gib = 0;  // the same moments in pinned host memory
  double activations_gib = 0;  // the update's: checkpoints + one layer's working set, or all layers
  double logits_gib = 0;       // the loss's logits and their gradient
  double kv_cache_gib = 0;     // generation
  double state_gib() const { return weights_gib + gradients_gib + optimizer_gib; }
  double update_gib() const { return state_gib() + activations_gib + logits_gib; }
  double generation_gib() const { return state_gib() + kv_cache_gib; }
  // The larger phase: the two never hold their memory at the same time.
  double peak_gib() const {
    return update_gib() > generation_gib() ? update_gib() : generation_gib();
  }
};

// The estimate for `model` with `lora` (rank 0: full fine-tuning) running `work`. Activations
// are counted per token from the tensors one decoder layer keeps for its backward plus the
// largest gradients alive while it runs (docs/trainer.md, "Memory"); allocator slack and the
// CUDA context are not counted.
MemoryEstimate estimate_memory(const Qwen2Config& model, const LoraConfig& lora,
                               const Workload& work = {});

// Bytes one decoder layer holds per token of a micro-batch while its backward runs:
// activations saved by its forward plus the gradient buffers alive at once.
double layer_bytes_per_token(const Qwen2Config& model, const LoraConfig& lora, int element_bytes);

}  // namespace kevin::train
