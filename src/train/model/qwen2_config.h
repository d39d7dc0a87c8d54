// qwen2_config.h — the hyper-parameters of a Qwen2-family decoder (QwQ-32B, Qwen2.5) as an HF
// model folder's config.json gives them, with the defaults transformers applies to keys a
// config leaves out.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "core/json.h"
#include "core/status.h"

namespace kevin::train {

struct Qwen2Config {
  int64_t vocab_size = 151936;
  int64_t hidden_size = 4096;
  int64_t intermediate_size = 22016;
  int64_t num_hidden_layers = 32;
  int64_t num_attention_heads = 32;
  int64_t num_key_value_heads = 32;
  int64_t max_position_embeddings = 32768;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  bool tie_word_embeddings = false;
  std::string torch_dtype = "bfloat16";

  int64_t head_dim() const { return hidden_size / num_attention_heads; }
  // Parameters of the whole model (embeddings and head counted once when tied).
  int64_t parameter_count() const;
};

// kInvalidArgument naming the key for a missing required key, a wrong type, or sizes that do
// not fit together (heads not dividing the width, KV heads not dividing the heads).
Result<Qwen2Config> qwen2_config_from_json(const Json& j);
Json to_json(const Qwen2Config& c);
// Reads <dir>/config.json.
Result<Qwen2Config> load_qwen2_config(const std::filesystem::path& model_dir);

}  // namespace kevin::train
