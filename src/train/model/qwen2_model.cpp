// qwen2_model.cpp — the decoder's layers, masks, rotary embeddings and weight loading.
#include "train/model/qwen2_model.h"

#include <ATen/autocast_mode.h>
#include <torch/version.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include "train/model/rotary.h"
#include "train/model/swiglu.h"

namespace kevin::train {
namespace {

#define KEVIN_SDPA_GQA \
  (TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 5))

#if TORCH_VERSION_MAJOR >= 2
// [B, kv, S, D] → [B, kv * groups, S, D]: each key/value head serves `groups` query heads.
torch::Tensor repeat_kv(const torch::Tensor& x, int64_t groups) {
  if (groups == 1) return x;
  const auto b = x.size(0), kv = x.size(1), s = x.size(2), d = x.size(3);
  return x.unsqueeze(2).expand({b, kv, groups, s, d}).reshape({b, kv * groups, s, d});
}
#else

// Attention as matmuls with the softmax in fp32 (SDPA's math path, so bf16 models agree
// across versions). The `groups` query heads of one key/value head are stacked on the row
// axis, so K and V broadcast over them without a copy.
torch::Tensor grouped_math_attention(const torch::Tensor& q, const torch::Tensor& k,
                                     const torch::Tensor& v, const torch::Tensor& mask) {
  const auto b = q.size(0), h = q.size(1), t = q.size(2), d = q.size(3);
  const auto kv = k.size(1), s = k.size(2), groups = h / kv;
  const auto rows = q.to(torch::kFloat32).reshape({b, kv, groups * t, d});
  auto scores =
      torch::matmul(rows, k.to(torch::kFloat32).transpose(-2, -1)).view({b, kv, groups, t, s}) /
      std::sqrt(static_cast<double>(d));
  if (mask.defined()) {
    scores = scores + mask.to(torch::kFloat32).unsqueeze(2);
  } else {
    const auto future = torch::ones({t, s}, q.options().dtype(torch::kBool)).triu(s - t + 1);
    scores = scores.masked_fill(future, -INFINITY);
  }
  const auto weights = torch::softmax(scores, -1).view({b, kv, groups * t, s});
  return torch::matmul(weights, v.to(torch::kFloat32)).view({b, h, t, d}).to(q.scalar_type());
}
#endif

// Runs a decoder layer without keeping its activations; backward recomputes them (the
// reentrant scheme of torch.utils.checkpoint). The layer is passed as an integer because
// saved_data holds IValues only; the mask travels as an optional because an undefined tensor
// argument (the causal path) is not a valid autograd input.
struct CheckpointedLayer : torch::autograd::Function<CheckpointedLayer> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& cos, const torch::Tensor& sin,
                               const std::optional<torch::Tensor>& optional_mask, int64_t layer) {
    const torch::Tensor mask = optional_mask.value_or(torch::Tensor());
    ctx->save_for_backward({x});
    ctx->saved_data["cos"] = cos;
    ctx->saved_data["sin"] = sin;
    ctx->saved_data["mask"] = mask;
    ctx->saved_data["layer"] = layer;
    torch::NoGradGuard no_grad;
    return as_layer(layer)->forward(x, cos, sin, mask, nullptr, nullptr);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_out) {
    const auto x = ctx->get_saved_variables()[0].detach().requires_grad_(true);
    torch::Tensor out;
    {
      torch::AutoGradMode enable(true);
      out = as_layer(ctx->saved_data["layer"].toInt())
                ->forward(x, ctx->saved_data["cos"].toTensor(), ctx->saved_data["sin"].toTensor(),
                          ctx->saved_data["mask"].toTensor(), nullptr, nullptr);
    }
    torch::autograd::backward({out}, {grad_out[0]});  // parameter gradients accumulate here
    return {x.grad(), {}, {}, {}, {}};
  }
  static DecoderLayerImpl* as_layer(int64_t address) {
    return reinterpret_cast<DecoderLayerImpl*>(address);
  }
};

torch::Tensor checkpointed(DecoderLayerImpl* layer, const torch::Tensor& x,
                           const torch::Tensor& cos, const torch::Tensor& sin,
                           const torch::Tensor& mask) {
  return CheckpointedLayer::apply(x, cos, sin, std::optional<torch::Tensor>(mask),
                                  reinterpret_cast<int64_t>(layer));
}

}  // namespace

torch::Tensor grouped_attention(const torch::Tensor& q, const torch::Tensor& k,
                                const torch::Tensor& v, const torch::Tensor& mask) {
#if TORCH_VERSION_MAJOR >= 2
  const int64_t groups = q.size(1) / k.size(1);
  if (!mask.defined()) {
#if KEVIN_SDPA_GQA
    return at::scaled_dot_product_attention(q, k, v, {}, 0.0, /*is_causal=*/true,
                                            /*scale=*/std::nullopt, /*enable_gqa=*/groups > 1);
#else
    return at::scaled_dot_product_attention(q, repeat_kv(k, groups), repeat_kv(v, groups), {}, 0.0,
                                            /*is_causal=*/true);
#endif
  }
  // A masked call in grouped-query mode falls back to SDPA's math path (O(T·S) memory); the
  // expanded form keeps the memory-efficient kernel.
  return at::scaled_dot_product_attention(q, repeat_kv(k, groups), repeat_kv(v, groups), mask);
#else
  return grouped_math_attention(q, k, v, mask);
#endif
}

RMSNormImpl::RMSNormImpl(int64_t width, double eps, const torch::TensorOptions& options)
    : eps_(eps) {
  weight = register_parameter("weight", torch::ones({width}, options));
}

torch::Tensor rms_norm(const torch::Tensor& x, const torch::Tensor& weight, double eps) {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  // One fused kernel each way on CUDA (the composite below is ~6 forward and ~12 backward
  // passes over the activations). Same fp32 arithmetic; for bf16 inputs it rounds once
  // after the weight instead of before it as well.
  if (x.is_cuda()) return at::rms_norm(x, {x.size(-1)}, weight.to(x.scalar_type()), eps);
#endif
  const auto x32 = x.to(torch::kFloat32);
  const auto normed = x32 * torch::rsqrt(x32.pow(2).mean(-1, true) + eps);
  return weight * normed.to(x.scalar_type());
}

ProjectionImpl::ProjectionImpl(int64_t in, int64_t out, bool with_bias,
                               const torch::TensorOptions& options) {
  weight = register_parameter("weight", torch::empty({out, in}, options));
  if (with_bias) bias = register_parameter("bias", torch::zeros({out}, options));
}

namespace {

bool autocast_on(const torch::Tensor& x) {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  return at::autocast::is_autocast_enabled(x.device().type());
#else
  return x.is_cuda() ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
#endif
}

}  // namespace

torch::Tensor ProjectionImpl::forward(const torch::Tensor& x) {
  auto y = torch::nn::functional::linear(x, weight, bias);
  if (!has_lora()) return y;
  // Autocast gives the fp32 adapter and a bf16 input one dtype; without it, the input is
  // raised to the adapter's precision and the update lowered to the output's.
  const auto adapter_dtype = lora_A->weight.scalar_type();
  const bool cast = x.scalar_type() != adapter_dtype && !autocast_on(x);
  const auto delta = lora_B(lora_A(cast ? x.to(adapter_dtype) : x)) * lora_scale;
  return y + (cast ? delta.to(y.scalar_type()) : delta);
}

void ProjectionImpl::add_lora(int64_t rank, double alpha) {
  lora_A = register_module(
      "lora_A", torch::nn::Linear(torch::nn::LinearOptions(weight.size(1), rank).bias(false)));
  lora_B = register_module(
      "lora_B", torch::nn::Linear(torch::nn::LinearOptions(rank, weight.size(0)).bias(false)));
  lora_A->to(weight.device(), torch::kFloat32);
  lora_B->to(weight.device(), torch::kFloat32);
  torch::NoGradGuard no_grad;
  // PEFT's default: A kaiming-uniform (a = sqrt(5), which is torch's Linear init), B zero.
  lora_B->weight.zero_();
  lora_scale = alpha / static_cast<double>(rank);
}

torch::Tensor ProjectionImpl::merged_weight() const {
  if (!has_lora()) return weight;
  torch::NoGradGuard no_grad;
  return (weight.to(torch::kFloat32) +
          torch::matmul(lora_B->weight.to(torch::kFloat32), lora_A->weight.to(torch::kFloat32)) *
              lora_scale)
      .to(weight.scalar_type());
}

torch::Tensor project_together(const std::vector<ProjectionImpl*>& projections,
                               const torch::Tensor& x) {
  std::vector<torch::Tensor> weights, biases;
  bool any_lora = false;
  for (const ProjectionImpl* p : projections) {
    any_lora = any_lora || p->has_lora();
    weights.push_back(p->weight);
    if (p->bias.defined()) biases.push_back(p->bias);
  }
  // Concatenating the weights copies them; concatenating the outputs copies rows × out
  // values instead, less when there are fewer rows than input features (decoding).
  const bool few_rows = x.numel() / x.size(-1) < x.size(-1);
  if (any_lora || few_rows || (!biases.empty() && biases.size() != projections.size())) {
    std::vector<torch::Tensor> outputs;
    for (ProjectionImpl* p : projections) outputs.push_back(p->forward(x));
    return torch::cat(outputs, -1);
  }
  return torch::nn::functional::linear(x, torch::cat(weights, 0),
                                       biases.empty() ? torch::Tensor() : torch::cat(biases, 0));
}

EmbeddingImpl::EmbeddingImpl(int64_t vocab, int64_t width, const torch::TensorOptions& options) {
  weight = register_parameter("weight", torch::empty({vocab, width}, options));
}

torch::Tensor EmbeddingImpl::forward(const torch::Tensor& ids) {
  return torch::embedding(weight, ids);
}

AttentionImpl::AttentionImpl(const Qwen2Config& c, const torch::TensorOptions& options)
    : heads_(c.num_attention_heads), kv_heads_(c.num_key_value_heads), head_dim_(c.head_dim()) {
  q_proj = register_module("q_proj", Projection(c.hidden_size, heads_ * head_dim_, true, options));
  k_proj =
      register_module("k_proj", Projection(c.hidden_size, kv_heads_ * head_dim_, true, options));
  v_proj =
      register_module("v_proj", Projection(c.hidden_size, kv_heads_ * head_dim_, true, options));
  o_proj = register_module("o_proj", Projection(heads_ * head_dim_, c.hidden_size, false, options));
}

torch::Tensor AttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& cos,
                                     const torch::Tensor& sin, const torch::Tensor& mask,
                                     torch::Tensor* cache_k, torch::Tensor* cache_v) {
  return forward_with(x, cos, sin, [&](const torch::Tensor& q, torch::Tensor k, torch::Tensor v) {
    if (cache_k != nullptr) {
      if (cache_k->defined()) {
        k = torch::cat({*cache_k, k}, 2);
        v = torch::cat({*cache_v, v}, 2);
      }
      *cache_k = k;
      *cache_v = v;
    }
    return grouped_attention(q, k, v, mask);
  });
}

torch::Tensor AttentionImpl::forward_with(const torch::Tensor& x, const torch::Tensor& cos,
                                          const torch::Tensor& sin, const Attend& attend) {
  const auto b = x.size(0), t = x.size(1);
  const auto qkv = project_together({q_proj.get(), k_proj.get(), v_proj.get()}, x);
  const int64_t q_width = heads_ * head_dim_, kv_width = kv_heads_ * head_dim_;
  // split (not narrow): its backward is one concatenation, not a zero-filled copy per part.
  const auto parts = qkv.split_with_sizes({q_width, kv_width, kv_width}, -1);
  const auto q = apply_rotary(parts[0].view({b, t, heads_, head_dim_}), cos, sin).transpose(1, 2);
  const auto k =
      apply_rotary(parts[1].view({b, t, kv_heads_, head_dim_}), cos, sin).transpose(1, 2);
  const auto v = parts[2].view({b, t, kv_heads_, head_dim_}).transpose(1, 2);
  const auto out = attend(q, k, v);
  return o_proj(out.transpose(1, 2).reshape({b, t, heads_ * head_dim_}));
}

MLPImpl::MLPImpl(const Qwen2Config& c, const torch::TensorOptions& options) {
  const int64_t h = c.hidden_size, i = c.intermediate_size;
  gate_proj = register_module("gate_proj", Projection(h, i, false, options));
  up_proj = register_module("up_proj", Projection(h, i, false, options));
  down_proj = register_module("down_proj", Projection(i, h, false, options));
}

torch::Tensor MLPImpl::forward(const torch::Tensor& x) {
  return down_proj(swiglu(project_together({gate_proj.get(), up_proj.get()}, x)));
}

DecoderLayerImpl::DecoderLayerImpl(const Qwen2Config& c, const torch::TensorOptions& options) {
  self_attn = register_module("self_attn", Attention(c, options));
  mlp = register_module("mlp", MLP(c, options));
  input_layernorm =
      register_module("input_layernorm", RMSNorm(c.hidden_size, c.rms_norm_eps, options));
  post_attention_layernorm =
      register_module("post_attention_layernorm", RMSNorm(c.hidden_size, c.rms_norm_eps, options));
}

torch::Tensor DecoderLayerImpl::forward(const torch::Tensor& x, const torch::Tensor& cos,
                                        const torch::Tensor& sin, const torch::Tensor& mask,
                                        torch::Tensor* cache_k, torch::Tensor* cache_v) {
  const auto h = x + self_attn(input_layernorm(x), cos, sin, mask, cache_k, cache_v);
  return h + mlp(post_attention_layernorm(h));
}

torch::Tensor DecoderLayerImpl::forward_with(const torch::Tensor& x, const torch::Tensor& cos,
                                             const torch::Tensor& sin, const Attend& attend) {
  const auto h = x + self_attn->forward_with(input_layernorm(x), cos, sin, attend);
  return h + mlp(post_attention_layernorm(h));
}

Qwen2BodyImpl::Qwen2BodyImpl(const Qwen2Config& c, const torch::TensorOptions& options) {
  embed_tokens = register_module("embed_tokens", Embedding(c.vocab_size, c.hidden_size, options));
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) layers->push_back(DecoderLayer(c, options));
  norm = register_module("norm", RMSNorm(c.hidden_size, c.rms_norm_eps, options));
}

std::pair<torch::Tensor, torch::Tensor> rotary_cos_sin(const torch::Tensor& positions,
                                                       const torch::Tensor& inv_freq,
                                                       torch::Dtype dtype) {
  const auto freqs = positions.to(torch::kFloat32).unsqueeze(-1) * inv_freq.view({1, 1, -1});
  const auto angles = torch::cat({freqs, freqs}, -1);
  return {angles.cos().to(dtype), angles.sin().to(dtype)};
}

namespace {

// Additive mask [B, 1, T, S]: causal over all S = past + T positions, and no attention to
// padding. A padding query still sees itself, so no row is fully masked (NaNs would reach
// real rows through the padding's keys).
torch::Tensor additive_mask(const torch::Tensor& mask2d, int64_t past, int64_t t,
                            const torch::TensorOptions& options) {
  const auto b = mask2d.size(0), s = past + t;
  const auto longs = torch::TensorOptions(mask2d.device()).dtype(torch::kLong);
  const auto query_pos = torch::arange(past, s, longs).view({t, 1});
  const auto key_pos = torch::arange(0, s, longs).view({1, s});
  const auto allowed =
      ((key_pos <= query_pos).view({1, 1, t, s}) & mask2d.to(torch::kBool).view({b, 1, 1, s})) |
      (key_pos == query_pos).view({1, 1, t, s});
  return torch::zeros({b, 1, t, s}, options).masked_fill(allowed.logical_not(), -INFINITY);
}

}  // namespace

Qwen2ForCausalLMImpl::Qwen2ForCausalLMImpl(Qwen2Config c, const ModelInit& init)
    : config_(std::move(c)) {
  const auto options = torch::TensorOptions(init.device).dtype(init.dtype);
  model = register_module("model", Qwen2Body(config_, options));
  if (!config_.tie_word_embeddings) {
    lm_head = register_module("lm_head",
                              Projection(config_.hidden_size, config_.vocab_size, false, options));
  }
  const int64_t d = config_.head_dim();
  inv_freq_ = 1.0 / torch::pow(config_.rope_theta,
                               torch::arange(0, d, 2, torch::kFloat64) / static_cast<double>(d));
  inv_freq_ = inv_freq_.to(torch::kFloat32);
  if (!init.random) return;
  torch::NoGradGuard no_grad;
  for (auto& p : named_parameters()) {
    if (p.key().find("norm") != std::string::npos) continue;
    if (p.key().find(".bias") != std::string::npos) {
      p.value().zero_();
    } else {
      p.value().normal_(0.0, 0.02);
    }
  }
}

torch::Tensor Qwen2ForCausalLMImpl::forward(const torch::Tensor& input_ids,
                                            const torch::Tensor& attention_mask, KVCache* cache) {
  return lm_logits(hidden_states(input_ids, attention_mask, cache));
}

torch::Tensor Qwen2ForCausalLMImpl::lm_logits(const torch::Tensor& hidden) {
  return config_.tie_word_embeddings ? torch::matmul(hidden, model->embed_tokens->weight.t())
                                     : lm_head(hidden);
}

torch::Tensor Qwen2ForCausalLMImpl::lm_head_weight() const {
  return config_.tie_word_embeddings ? model->embed_tokens->weight : lm_head->weight;
}

std::pair<torch::Tensor, torch::Tensor> Qwen2ForCausalLMImpl::rotary_at(
    const torch::Tensor& positions) {
  if (inv_freq_.device() != positions.device()) inv_freq_ = inv_freq_.to(positions.device());
  // fp32 whatever the model's dtype: apply_rotary computes in fp32, so the angles are
  // converted once here rather than for q and k in every layer.
  return rotary_cos_sin(positions, inv_freq_, torch::kFloat32);
}

torch::Tensor Qwen2ForCausalLMImpl::hidden_states_with(const torch::Tensor& input_ids,
                                                       const torch::Tensor& positions,
                                                       LayerAttention& attention) {
  auto x = model->embed_tokens(input_ids);
  const auto [cos, sin] = rotary_at(positions);
  for (size_t i = 0; i < model->layers->size(); ++i) {
    x = model->layers->ptr<DecoderLayerImpl>(i)->forward_with(
        x, cos, sin,
        [&attention, i](const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v) {
          return attention.attend(i, q, k, v);
        });
  }
  return model->norm(x);
}

torch::Tensor Qwen2ForCausalLMImpl::hidden_states(const torch::Tensor& input_ids,
                                                  const torch::Tensor& attention_mask,
                                                  KVCache* cache) {
  const auto b = input_ids.size(0), t = input_ids.size(1);
  const int64_t past = cache != nullptr ? cache->length() : 0;
  const auto device = input_ids.device();
  const auto mask2d =
      attention_mask.defined()
          ? attention_mask.to(device, torch::kLong)
          : torch::ones({b, past + t}, torch::TensorOptions(device).dtype(torch::kLong));
  // Position of a token = number of real tokens before it (left padding does not count).
  const auto positions = (mask2d.cumsum(1) - 1).clamp_min(0).narrow(1, past, t);
  auto x = model->embed_tokens(input_ids);
  const auto [cos, sin] = rotary_at(positions);
  const bool causal_only = !attention_mask.defined() && cache == nullptr;
  const auto mask = causal_only ? torch::Tensor() : additive_mask(mask2d, past, t, x.options());
  if (cache != nullptr && cache->keys.empty()) {
    cache->keys.resize(static_cast<size_t>(config_.num_hidden_layers));
    cache->values.resize(static_cast<size_t>(config_.num_hidden_layers));
  }
  const bool checkpoint = checkpointing_ && cache == nullptr && torch::GradMode::is_enabled();
  // A checkpointed layer's output needs a gradient only if one of its inputs does: with a
  // frozen embedding (LoRA) none would, and no adapter would ever get one.
  if (checkpoint && !x.requires_grad()) x = x.detach().requires_grad_(true);
  for (size_t i = 0; i < model->layers->size(); ++i) {
    auto layer = model->layers->ptr<DecoderLayerImpl>(i);
    if (checkpoint) {
      x = checkpointed(layer.get(), x, cos, sin, mask);
    } else {
      x = layer->forward(x, cos, sin, mask, cache ? &cache->keys[i] : nullptr,
                         cache ? &cache->values[i] : nullptr);
    }
  }
  return model->norm(x);
}

namespace {

bool is_lora_name(const std::string& name) { return name.find(".lora_") != std::string::npos; }

}  // namespace

std::vector<std::pair<std::string, torch::Tensor>> Qwen2ForCausalLMImpl::named_weights() const {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& p : named_parameters()) {
    if (!is_lora_name(p.key())) out.emplace_back(p.key(), p.value());
  }
  return out;
}

std::vector<std::pair<std::string, torch::Tensor>> Qwen2ForCausalLMImpl::lora_weights() const {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& p : named_parameters()) {
    if (is_lora_name(p.key())) out.emplace_back(p.key(), p.value());
  }
  return out;
}

std::vector<std::pair<std::string, std::function<torch::Tensor()>>>
Qwen2ForCausalLMImpl::merged_weight_makers() const {
  std::map<std::string, const ProjectionImpl*> adapted;
  for (const auto& m : named_modules()) {
    if (const auto* projection = m.value()->as<ProjectionImpl>();
        projection != nullptr && projection->has_lora()) {
      adapted[m.key() + ".weight"] = projection;
    }
  }
  std::vector<std::pair<std::string, std::function<torch::Tensor()>>> out;
  for (const auto& [name, tensor] : named_weights()) {
    if (const auto it = adapted.find(name); it != adapted.end()) {
      out.emplace_back(name, [projection = it->second] { return projection->merged_weight(); });
    } else {
      out.emplace_back(name, [tensor = tensor] { return tensor; });
    }
  }
  return out;
}

std::vector<std::pair<std::string, torch::Tensor>> Qwen2ForCausalLMImpl::merged_weights() const {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& [name, make] : merged_weight_makers()) out.emplace_back(name, make());
  return out;
}

Status Qwen2ForCausalLMImpl::add_lora(const LoraConfig& lora) {
  if (lora.rank < 1) return invalid_argument("LoRA rank must be at least 1");
  if (lora_.rank > 0) return invalid_argument("the model already has LoRA adapters");
  static const std::set<std::string> kKnown = {"q_proj",    "k_proj",  "v_proj",   "o_proj",
                                               "gate_proj", "up_proj", "down_proj"};
  for (const std::string& target : lora.targets) {
    if (kKnown.count(target) == 0) return invalid_argument("unknown LoRA target module: " + target);
  }
  if (lora.targets.empty()) return invalid_argument("LoRA needs at least one target module");
  for (auto& p : parameters()) p.set_requires_grad(false);
  for (auto& m : named_modules()) {
    auto* projection = m.value()->as<ProjectionImpl>();
    if (projection == nullptr) continue;
    const std::string leaf = m.key().substr(m.key().rfind('.') + 1);
    if (std::find(lora.targets.begin(), lora.targets.end(), leaf) != lora.targets.end()) {
      projection->add_lora(lora.rank, lora.alpha);
    }
  }
  lora_ = lora;
  return Status::ok();
}

std::vector<torch::Tensor> Qwen2ForCausalLMImpl::trainable_parameters() const {
  std::vector<torch::Tensor> out;
  for (const auto& p : parameters()) {
    if (p.requires_grad()) out.push_back(p);
  }
  return out;
}

Status Qwen2ForCausalLMImpl::load_weights(const std::map<std::string, torch::Tensor>& weights,
                                          const CopyWeight& copy) {
  torch::NoGradGuard no_grad;
  const auto params = named_weights();
  std::set<std::string> names;
  for (const auto& p : params) names.insert(p.first);
  for (const auto& [name, tensor] : weights) {
    if (name == "lm_head.weight" && config_.tie_word_embeddings)
      continue;  // some tied checkpoints keep a copy
    if (name.find("rotary_emb.inv_freq") != std::string::npos)
      continue;  // older checkpoints carry the buffer
    if (names.count(name) == 0)
      return invalid_argument("checkpoint has an unexpected weight: " + name);
  }
  for (const auto& [name, param] : params) {
    const auto it = weights.find(name);
    if (it == weights.end()) return invalid_argument("checkpoint lacks weight " + name);
    if (it->second.sizes() != param.sizes()) {
      return invalid_argument("weight " + name + " has shape " + c10::str(it->second.sizes()) +
                              ", the model expects " + c10::str(param.sizes()));
    }
  }
  for (auto& [name, param] : params) {
    const torch::Tensor& source = weights.at(name);
    if (copy) {
      KEVIN_RETURN_IF_ERROR(copy(source, param));
    } else {
      param.copy_(source);
    }
  }
  return Status::ok();
}

}  // namespace kevin::train
