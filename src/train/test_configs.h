// test_configs.h — tiny Qwen2 shapes for the trainer's tests (CPU-sized, GQA on by default).
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

}  // namespace kevin::train
