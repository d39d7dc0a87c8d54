// bench_shapes.h — the model shape the trainer benchmarks share: Qwen2.5-0.5B's configuration
// (random weights; no checkpoint can be downloaded on the benchmark machines).
#pragma once

#include "train/model/qwen2_config.h"

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

}  // namespace kevin::bench
