// test_configs.h — Qwen2 shapes for the trainer's tests and benchmarks: tiny ones (CPU-sized,
// GQA on by default) and QwQ-32B's, which sizing tests and bench/train_32b.cpp share.
#pragma once

#include "train/model/qwen2_config.h"

namespace kevin::train {

// A config of the given sizes, every other field at its default.
inline Qwen2Config tiny_qwen2(int64_t vocab, int64_t hidden, int64_t intermediate,
                              int64_t layers = 2, int64_t heads = 4, int64_t kv_heads = 2) {
  Qwen2Config c;
  c.vocab_size = vocab;
  c.hidden_size = hidden;
  c.intermediate_size = intermediate;
  c.num_hidden_layers = layers;
  c.num_attention_heads = heads;
  c.num_key_value_heads = kv_heads;
  return c;
}

// QwQ-32B's config.json (the paper's base model); `layers` below 64 keeps every other size.
inline Qwen2Config qwq_32b_shape(int64_t layers = 64) {
  Qwen2Config c = tiny_qwen2(152064, 5120, 27648, layers, 40, 8);
  c.max_position_embeddings = 40960;
  c.rms_norm_eps = 1e-5;
  c.rope_theta = 1e6;
  c.tie_word_embeddings = false;
  return c;
}

}  // namespace kevin::train
