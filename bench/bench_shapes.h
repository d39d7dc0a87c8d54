// bench_shapes.h — the model shapes the trainer benchmarks use: Qwen2.5-0.5B's configuration
// and QwQ-32B's (random weights; no checkpoint can be downloaded on the benchmark machines).
#pragma once

#include "train/model/qwen2_config.h"
#include "train/test_configs.h"

namespace kevin::bench {

inline train::Qwen2Config qwen25_half_b() {
  train::Qwen2Config c;
  c.vocab_size = 151936;
  c.hidden_size = 896;
  c.intermediate_size = 4864;
  c.num_hidden_layers = 24;
  c.num_attention_heads = 14;
  c.num_key_value_heads = 2;
  c.rope_theta = 1e6;
  c.tie_word_embeddings = true;
  return c;
}

// QwQ-32B's config.json (the paper's base model); `layers` below 64 keeps every other size.
inline train::Qwen2Config qwq_32b(int64_t layers = 64) { return train::qwq_32b_shape(layers); }

// Qwen2.5-7B's (and Qwen2.5-Coder-7B's) config.json: full fine-tuning's supported size.
inline train::Qwen2Config qwen25_7b(int64_t layers = 28) {
  train::Qwen2Config c = train::tiny_qwen2(152064, 3584, 18944, layers, 28, 4);
  c.max_position_embeddings = 32768;
  c.rms_norm_eps = 1e-6;
  c.rope_theta = 1e6;
  c.tie_word_embeddings = false;
  return c;
}

}  // namespace kevin::bench
