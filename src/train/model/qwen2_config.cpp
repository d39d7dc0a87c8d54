// qwen2_config.cpp — config.json parsing and validation.
#include "train/model/qwen2_config.h"

#include <algorithm>

#include "core/file.h"

namespace kevin::train {

int64_t Qwen2Config::parameter_count() const {
  const int64_t kv = num_key_value_heads * head_dim();
  const int64_t attention = hidden_size * hidden_size + hidden_size + 2 * (hidden_size * kv + kv) +
                            hidden_size * hidden_size;
  const int64_t mlp = 3 * hidden_size * intermediate_size;
  const int64_t layer = attention + mlp + 2 * hidden_size;
  const int64_t embeddings = vocab_size * hidden_size;
  return embeddings * (tie_word_embeddings ? 1 : 2) + num_hidden_layers * layer + hidden_size;
}

namespace {

// kUnimplemented for a config naming another model family: its weights would load into the
// wrong layers, or fail deep inside with a missing tensor.
Status check_architecture(const Json& j) {
  const std::string supported =
      "kevin's trainer implements Qwen2 (Qwen2, Qwen2.5, Qwen2.5-Coder, QwQ, "
      "DeepSeek-R1-Distill-Qwen)";
  KEVIN_ASSIGN_OR_RETURN(std::string type, json_get_or<std::string>(j, "model_type", "qwen2"));
  if (type != "qwen2")
    return unimplemented("config.json: model_type \"" + type + "\" is not supported; " + supported);
  KEVIN_ASSIGN_OR_RETURN(auto architectures, json_get_or<std::vector<std::string>>(
                                                 j, "architectures", {"Qwen2ForCausalLM"}));
  if (std::find(architectures.begin(), architectures.end(), "Qwen2ForCausalLM") ==
      architectures.end()) {
    return unimplemented("config.json: architecture " +
                         (architectures.empty() ? std::string("(none)") : architectures.front()) +
                         " is not supported; " + supported);
  }
  return Status::ok();
}

// The rotary base: top-level "rope_theta" (transformers 4.x) or "rope_parameters" /
// "rope_scaling" of type "default" (transformers 5). Scaled variants (YaRN, dynamic NTK)
// change the angles, so they are refused rather than silently ignored.
Result<double> rope_theta_of(const Json& j, double fallback) {
  KEVIN_ASSIGN_OR_RETURN(double theta, json_get_or<double>(j, "rope_theta", fallback));
  for (const char* key : {"rope_parameters", "rope_scaling"}) {
    const auto it = j.find(key);
    if (it == j.end() || it->is_null()) continue;
    if (!it->is_object())
      return invalid_argument(std::string("config.json: ") + key + " must be an object");
    KEVIN_ASSIGN_OR_RETURN(std::string type, json_get_or<std::string>(*it, "rope_type", "default"));
    if (type != "default")
      return unimplemented(std::string("config.json: ") + key + " of type \"" + type +
                           "\" is not supported");
    KEVIN_ASSIGN_OR_RETURN(theta, json_get_or<double>(*it, "rope_theta", theta));
  }
  return theta;
}

}  // namespace

Result<Qwen2Config> qwen2_config_from_json(const Json& j) {
  if (!j.is_object()) return invalid_argument("config.json: expected an object");
  Qwen2Config c;
  KEVIN_RETURN_IF_ERROR(check_architecture(j));
  KEVIN_ASSIGN_OR_RETURN(c.vocab_size, json_get<int64_t>(j, "vocab_size"));
  KEVIN_ASSIGN_OR_RETURN(c.hidden_size, json_get<int64_t>(j, "hidden_size"));
  KEVIN_ASSIGN_OR_RETURN(c.intermediate_size, json_get<int64_t>(j, "intermediate_size"));
  KEVIN_ASSIGN_OR_RETURN(c.num_hidden_layers, json_get<int64_t>(j, "num_hidden_layers"));
  KEVIN_ASSIGN_OR_RETURN(c.num_attention_heads, json_get<int64_t>(j, "num_attention_heads"));
  KEVIN_ASSIGN_OR_RETURN(c.num_key_value_heads,
                         json_get_or<int64_t>(j, "num_key_value_heads", c.num_attention_heads));
  KEVIN_ASSIGN_OR_RETURN(
      c.max_position_embeddings,
      json_get_or<int64_t>(j, "max_position_embeddings", c.max_position_embeddings));
  KEVIN_ASSIGN_OR_RETURN(c.rms_norm_eps, json_get_or<double>(j, "rms_norm_eps", c.rms_norm_eps));
  KEVIN_ASSIGN_OR_RETURN(c.rope_theta, rope_theta_of(j, c.rope_theta));
  KEVIN_ASSIGN_OR_RETURN(c.tie_word_embeddings, json_get_or<bool>(j, "tie_word_embeddings", false));
  // transformers 5 writes "dtype" where 4.x wrote "torch_dtype".
  KEVIN_ASSIGN_OR_RETURN(c.torch_dtype, json_get_or<std::string>(j, "dtype", c.torch_dtype));
  KEVIN_ASSIGN_OR_RETURN(c.torch_dtype, json_get_or<std::string>(j, "torch_dtype", c.torch_dtype));
  KEVIN_ASSIGN_OR_RETURN(const bool sliding, json_get_or<bool>(j, "use_sliding_window", false));
  if (sliding)
    return unimplemented("config.json: use_sliding_window is not supported (full attention only)");
  for (const auto& [name, v] : {std::pair<const char*, int64_t>{"vocab_size", c.vocab_size},
                                {"hidden_size", c.hidden_size},
                                {"intermediate_size", c.intermediate_size},
                                {"num_hidden_layers", c.num_hidden_layers},
                                {"num_attention_heads", c.num_attention_heads},
                                {"num_key_value_heads", c.num_key_value_heads}}) {
    if (v <= 0) return invalid_argument(std::string("config.json: ") + name + " must be positive");
  }
  if (c.hidden_size % c.num_attention_heads != 0) {
    return invalid_argument("config.json: hidden_size is not a multiple of num_attention_heads");
  }
  if (c.num_attention_heads % c.num_key_value_heads != 0) {
    return invalid_argument(
        "config.json: num_attention_heads is not a multiple of num_key_value_heads");
  }
  if (c.head_dim() % 2 != 0)
    return invalid_argument("config.json: rotary embeddings need an even head size");
  return c;
}

Json to_json(const Qwen2Config& c) {
  return {{"architectures", {"Qwen2ForCausalLM"}},
          {"model_type", "qwen2"},
          {"vocab_size", c.vocab_size},
          {"hidden_size", c.hidden_size},
          {"intermediate_size", c.intermediate_size},
          {"num_hidden_layers", c.num_hidden_layers},
          {"num_attention_heads", c.num_attention_heads},
          {"num_key_value_heads", c.num_key_value_heads},
          {"max_position_embeddings", c.max_position_embeddings},
          {"rms_norm_eps", c.rms_norm_eps},
          {"rope_theta", c.rope_theta},
          {"tie_word_embeddings", c.tie_word_embeddings},
          {"hidden_act", "silu"},
          {"torch_dtype", c.torch_dtype}};
}

Result<Qwen2Config> load_qwen2_config(const std::filesystem::path& model_dir) {
  KEVIN_ASSIGN_OR_RETURN(std::string text, read_file(model_dir / "config.json"));
  KEVIN_ASSIGN_OR_RETURN(Json j, parse_json(text));
  return qwen2_config_from_json(j);
}

}  // namespace kevin::train
