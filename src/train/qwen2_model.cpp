// qwen2_model.cpp — the decoder's layers, masks, rotary embeddings and weight loading.
#include "train/qwen2_model.h"

#include <torch/version.h>

#include <cmath>

namespace kevin::train {
namespace {

torch::nn::Linear linear(int64_t in, int64_t out, bool bias) {
  return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(bias));
}

torch::Tensor rotate_half(const torch::Tensor& x) {
  const int64_t half = x.size(-1) / 2;
  return torch::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
}

// [B, kv, S, D] → [B, kv * groups, S, D]: each key/value head serves `groups` query heads.
torch::Tensor repeat_kv(const torch::Tensor& x, int64_t groups) {
  if (groups == 1) return x;
  const auto b = x.size(0), kv = x.size(1), s = x.size(2), d = x.size(3);
  return x.unsqueeze(2).expand({b, kv, groups, s, d}).reshape({b, kv * groups, s, d});
}

torch::Tensor attend(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, const torch::Tensor& mask) {
#if TORCH_VERSION_MAJOR >= 2
  return at::scaled_dot_product_attention(q, k, v, mask);
#else
  // Softmax in fp32 as SDPA's math path does, so bf16 models agree across versions.
  auto scores = torch::matmul(q.to(torch::kFloat32), k.to(torch::kFloat32).transpose(-2, -1)) /
                std::sqrt(static_cast<double>(q.size(-1)));
  scores = scores + mask.to(torch::kFloat32);
  return torch::matmul(torch::softmax(scores, -1), v.to(torch::kFloat32)).to(q.scalar_type());
#endif
}

}  // namespace

RMSNormImpl::RMSNormImpl(int64_t width, double eps) : eps_(eps) {
  weight = register_parameter("weight", torch::ones({width}));
}

torch::Tensor RMSNormImpl::forward(const torch::Tensor& x) {
  const auto x32 = x.to(torch::kFloat32);
  const auto normed = x32 * torch::rsqrt(x32.pow(2).mean(-1, true) + eps_);
  return weight * normed.to(x.scalar_type());
}

AttentionImpl::AttentionImpl(const Qwen2Config& c)
    : heads_(c.num_attention_heads), kv_heads_(c.num_key_value_heads), head_dim_(c.head_dim()) {
  q_proj = register_module("q_proj", linear(c.hidden_size, heads_ * head_dim_, true));
  k_proj = register_module("k_proj", linear(c.hidden_size, kv_heads_ * head_dim_, true));
  v_proj = register_module("v_proj", linear(c.hidden_size, kv_heads_ * head_dim_, true));
  o_proj = register_module("o_proj", linear(heads_ * head_dim_, c.hidden_size, false));
}

torch::Tensor AttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                                     const torch::Tensor& mask, torch::Tensor* cache_k, torch::Tensor* cache_v) {
  const auto b = x.size(0), t = x.size(1);
  auto q = q_proj(x).view({b, t, heads_, head_dim_}).transpose(1, 2);
  auto k = k_proj(x).view({b, t, kv_heads_, head_dim_}).transpose(1, 2);
  auto v = v_proj(x).view({b, t, kv_heads_, head_dim_}).transpose(1, 2);
  const auto c = cos.unsqueeze(1), s = sin.unsqueeze(1);
  q = q * c + rotate_half(q) * s;
  k = k * c + rotate_half(k) * s;
  if (cache_k != nullptr) {
    if (cache_k->defined()) {
      k = torch::cat({*cache_k, k}, 2);
      v = torch::cat({*cache_v, v}, 2);
    }
    *cache_k = k;
    *cache_v = v;
  }
  const int64_t groups = heads_ / kv_heads_;
  const auto out = attend(q, repeat_kv(k, groups), repeat_kv(v, groups), mask);
  return o_proj(out.transpose(1, 2).reshape({b, t, heads_ * head_dim_}));
}

MLPImpl::MLPImpl(const Qwen2Config& c) {
  gate_proj = register_module("gate_proj", linear(c.hidden_size, c.intermediate_size, false));
  up_proj = register_module("up_proj", linear(c.hidden_size, c.intermediate_size, false));
  down_proj = register_module("down_proj", linear(c.intermediate_size, c.hidden_size, false));
}

torch::Tensor MLPImpl::forward(const torch::Tensor& x) { return down_proj(torch::silu(gate_proj(x)) * up_proj(x)); }

DecoderLayerImpl::DecoderLayerImpl(const Qwen2Config& c) {
  self_attn = register_module("self_attn", Attention(c));
  mlp = register_module("mlp", MLP(c));
  input_layernorm = register_module("input_layernorm", RMSNorm(c.hidden_size, c.rms_norm_eps));
  post_attention_layernorm = register_module("post_attention_layernorm", RMSNorm(c.hidden_size, c.rms_norm_eps));
}

torch::Tensor DecoderLayerImpl::forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                                        const torch::Tensor& mask, torch::Tensor* cache_k, torch::Tensor* cache_v) {
  const auto h = x + self_attn(input_layernorm(x), cos, sin, mask, cache_k, cache_v);
  return h + mlp(post_attention_layernorm(h));
}

Qwen2BodyImpl::Qwen2BodyImpl(const Qwen2Config& c) {
  embed_tokens = register_module("embed_tokens", torch::nn::Embedding(c.vocab_size, c.hidden_size));
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) layers->push_back(DecoderLayer(c));
  norm = register_module("norm", RMSNorm(c.hidden_size, c.rms_norm_eps));
}

std::pair<torch::Tensor, torch::Tensor> rotary_cos_sin(const torch::Tensor& positions, const torch::Tensor& inv_freq,
                                                       torch::Dtype dtype) {
  const auto freqs = positions.to(torch::kFloat32).unsqueeze(-1) * inv_freq.to(positions.device()).view({1, 1, -1});
  const auto angles = torch::cat({freqs, freqs}, -1);
  return {angles.cos().to(dtype), angles.sin().to(dtype)};
}

Qwen2ForCausalLMImpl::Qwen2ForCausalLMImpl(Qwen2Config c) : config_(std::move(c)) {
  model = register_module("model", Qwen2Body(config_));
  if (!config_.tie_word_embeddings) lm_head = register_module("lm_head", linear(config_.hidden_size, config_.vocab_size, false));
  torch::NoGradGuard no_grad;
  for (auto& p : named_parameters()) {
    if (p.key().find("norm") != std::string::npos) continue;
    if (p.key().find(".bias") != std::string::npos) {
      p.value().zero_();
    } else {
      p.value().normal_(0.0, 0.02);
    }
  }
  const int64_t d = config_.head_dim();
  inv_freq_ = 1.0 / torch::pow(config_.rope_theta, torch::arange(0, d, 2, torch::kFloat64) / static_cast<double>(d));
  inv_freq_ = inv_freq_.to(torch::kFloat32);
}

torch::Tensor Qwen2ForCausalLMImpl::forward(const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                                            KVCache* cache) {
  const auto b = input_ids.size(0), t = input_ids.size(1);
  const int64_t past = cache != nullptr ? cache->length() : 0;
  const auto device = input_ids.device();
  const auto mask2d = attention_mask.defined() ? attention_mask.to(device, torch::kLong)
                                               : torch::ones({b, past + t}, torch::TensorOptions(device).dtype(torch::kLong));
  // Position of a token = number of real tokens before it (left padding does not count).
  const auto positions = (mask2d.cumsum(1) - 1).clamp_min(0).narrow(1, past, t);
  auto x = model->embed_tokens(input_ids);
  const auto [cos, sin] = rotary_cos_sin(positions, inv_freq_, x.scalar_type());
  // Additive mask [B, 1, T, S]: causal over all S positions, and no attention to padding.
  const auto query_pos = torch::arange(past, past + t, torch::TensorOptions(device).dtype(torch::kLong)).view({t, 1});
  const auto key_pos = torch::arange(0, past + t, torch::TensorOptions(device).dtype(torch::kLong)).view({1, past + t});
  // A padding query still sees itself, so no row is fully masked (NaNs would reach real rows
  // through the padding's keys).
  const auto allowed = ((key_pos <= query_pos).view({1, 1, t, past + t}) & mask2d.to(torch::kBool).view({b, 1, 1, past + t})) |
                       (key_pos == query_pos).view({1, 1, t, past + t});
  const auto mask = torch::zeros({b, 1, t, past + t}, x.options()).masked_fill(allowed.logical_not(), -INFINITY);
  if (cache != nullptr && cache->keys.empty()) {
    cache->keys.resize(static_cast<size_t>(config_.num_hidden_layers));
    cache->values.resize(static_cast<size_t>(config_.num_hidden_layers));
  }
  for (size_t i = 0; i < model->layers->size(); ++i) {
    auto layer = model->layers->ptr<DecoderLayerImpl>(i);
    x = layer->forward(x, cos, sin, mask, cache ? &cache->keys[i] : nullptr, cache ? &cache->values[i] : nullptr);
  }
  x = model->norm(x);
  return config_.tie_word_embeddings ? torch::matmul(x, model->embed_tokens->weight.t()) : lm_head(x);
}

std::vector<std::pair<std::string, torch::Tensor>> Qwen2ForCausalLMImpl::named_weights() const {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& p : named_parameters()) out.emplace_back(p.key(), p.value());
  return out;
}

Status Qwen2ForCausalLMImpl::load_weights(const std::map<std::string, torch::Tensor>& weights) {
  torch::NoGradGuard no_grad;
  auto params = named_parameters();
  for (const auto& [name, tensor] : weights) {
    if (name == "lm_head.weight" && config_.tie_word_embeddings) continue;  // some tied checkpoints keep a copy
    if (params.find(name) == nullptr) return invalid_argument("checkpoint has an unexpected weight: " + name);
  }
  for (auto& p : params) {
    const auto it = weights.find(p.key());
    if (it == weights.end()) return invalid_argument("checkpoint lacks weight " + p.key());
    if (it->second.sizes() != p.value().sizes()) {
      return invalid_argument("weight " + p.key() + " has shape " + c10::str(it->second.sizes()) + ", the model expects " +
                              c10::str(p.value().sizes()));
    }
    p.value().copy_(it->second);
  }
  return Status::ok();
}

}  // namespace kevin::train
