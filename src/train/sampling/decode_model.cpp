// decode_model.cpp — the fused and the module-by-module decode step, and the weights the fused
// one prepares.
#include "train/sampling/decode_model.h"

#include "train/model/precision.h"
#include "train/model/swiglu.h"

namespace kevin::train {
namespace {

// `x` in the dtype of `projection`'s weight, its output back in `dtype`.
torch::Tensor project(ProjectionImpl& projection, const torch::Tensor& x, torch::ScalarType dtype) {
  return projection.forward(x.to(projection.weight.scalar_type())).to(dtype);
}

}  // namespace

DecodeModel::DecodeModel(Qwen2ForCausalLM model, torch::ScalarType dtype, bool fuse)
    : model_(std::move(model)), dtype_(dtype), fuse_(fuse) {
  if (!fuse_) return;
  torch::NoGradGuard no_grad;
  prepare(/*refill=*/false);
  versions_ = weight_versions();
}

int64_t DecodeModel::copy_bytes(const Qwen2ForCausalLM& model, torch::ScalarType dtype) {
  int64_t elements = 0;
  for (const auto& [name, weight] : model->named_weights()) elements += weight.numel();
  return elements * static_cast<int64_t>(c10::elementSize(dtype));
}

void DecodeModel::prepare(bool refill) {
  // A weight that already is what the step needs is shared (and skipped on refill); anything
  // else is a copy, made once and then refilled in place.
  const auto put = [&](torch::Tensor& slot, const torch::Tensor& value) {
    const auto wanted = value.detach().to(dtype_).contiguous();
    if (!refill) {
      slot = wanted;
    } else if (slot.data_ptr() != value.data_ptr()) {
      slot.copy_(wanted);
    }
  };
  const auto merged = [](const auto& projection) { return projection->merged_weight(); };
  const auto& body = *model_->model;
  layers_.resize(body.layers->size());
  for (size_t i = 0; i < layers_.size(); ++i) {
    const auto& layer = *body.layers->ptr<DecoderLayerImpl>(i);
    const auto& attention = *layer.self_attn;
    const auto& mlp = *layer.mlp;
    Layer& w = layers_[i];
    put(w.input_norm, layer.input_layernorm->weight);
    put(w.qkv,
        torch::cat({merged(attention.q_proj), merged(attention.k_proj), merged(attention.v_proj)}));
    if (attention.q_proj->bias.defined()) {
      put(w.qkv_bias,
          torch::cat({attention.q_proj->bias, attention.k_proj->bias, attention.v_proj->bias}));
    }
    put(w.o, merged(attention.o_proj));
    put(w.post_norm, layer.post_attention_layernorm->weight);
    put(w.gate_up, torch::cat({merged(mlp.gate_proj), merged(mlp.up_proj)}));
    put(w.down, merged(mlp.down_proj));
  }
  put(embed_, body.embed_tokens->weight);
  put(final_norm_, body.norm->weight);
  if (model_->config().tie_word_embeddings) {
    head_ = embed_;
  } else {
    put(head_, merged(model_->lm_head));
  }
}

std::vector<std::pair<const void*, int64_t>> DecodeModel::weight_versions() const {
  std::vector<std::pair<const void*, int64_t>> versions;
  for (const auto& p : model_->parameters()) versions.emplace_back(p.data_ptr(), p._version());
  return versions;
}

void DecodeModel::refresh() {
  if (!fuse_) return;  // the module-by-module step reads the model's own weights
  auto now = weight_versions();
  if (now == versions_) return;
  torch::NoGradGuard no_grad;
  // A parameter replaced by a new tensor (not updated in place) changes its address: the copies
  // are made again; graphs captured over them must then be captured again too (the engine's
  // caller re-creates the engine after moving a model).
  const bool same_tensors =
      now.size() == versions_.size() &&
      std::equal(now.begin(), now.end(), versions_.begin(),
                 [](const auto& a, const auto& b) { return a.first == b.first; });
  prepare(/*refill=*/same_tensors);
  versions_ = std::move(now);
}

torch::Tensor DecodeModel::attend(size_t index, const torch::Tensor& q, const DecodeInputs& in,
                                  KVPool& pool) const {
  const PagedKeys keys{pool.keys(index),       pool.values(index), in.block_table, in.lengths,
                       pool.shape().page_size, in.max_length,      arrivals_};
  const auto out = paged_decode_attention(q.to(keys.k_pool.scalar_type()), keys);
  return out.to(dtype_).reshape({q.size(0), q.size(1) * q.size(2)});
}

torch::Tensor DecodeModel::fused_layer(const Layer& w, size_t index, torch::Tensor x,
                                       const torch::Tensor& cos, const torch::Tensor& sin,
                                       const DecodeInputs& in, KVPool& pool) {
  const Qwen2Config& c = model_->config();
  const int64_t q_width = c.num_attention_heads * c.head_dim(),
                kv_width = c.num_key_value_heads * c.head_dim();
  const double eps = c.rms_norm_eps;
  auto h = rms_norm(x, w.input_norm, eps);
  const auto qkv =
      w.qkv_bias.defined() ? torch::addmm(w.qkv_bias, h, w.qkv.t()) : torch::mm(h, w.qkv.t());
  const auto q = rotary_store(qkv.narrow(1, 0, q_width), qkv.narrow(1, q_width, kv_width),
                              qkv.narrow(1, q_width + kv_width, kv_width), cos, sin, in.slots,
                              pool.keys(index), pool.values(index));
  // The residual adds accumulate into x in place: an out-of-place addmm first copies x into its
  // output, one more kernel per projection.
  x.addmm_(attend(index, q, in, pool), w.o.t());
  h = rms_norm(x, w.post_norm, eps);
  return x.addmm_(swiglu(torch::mm(h, w.gate_up.t())), w.down.t());
}

torch::Tensor DecodeModel::module_layer(size_t index, torch::Tensor x, const torch::Tensor& cos,
                                        const torch::Tensor& sin, const DecodeInputs& in,
                                        KVPool& pool) {
  auto& layer = *model_->model->layers->ptr<DecoderLayerImpl>(index);
  auto& attention = *layer.self_attn;
  auto& mlp = *layer.mlp;
  auto h = layer.input_layernorm(x).to(dtype_);
  const auto q =
      rotary_store(project(*attention.q_proj, h, dtype_), project(*attention.k_proj, h, dtype_),
                   project(*attention.v_proj, h, dtype_), cos, sin, in.slots, pool.keys(index),
                   pool.values(index));
  x = x + project(*attention.o_proj, attend(index, q, in, pool), dtype_);
  h = layer.post_attention_layernorm(x).to(dtype_);
  const auto gate_up =
      torch::cat({project(*mlp.gate_proj, h, dtype_), project(*mlp.up_proj, h, dtype_)}, -1);
  return x + project(*mlp.down_proj, swiglu(gate_up), dtype_);
}

torch::Tensor DecodeModel::hidden(const DecodeInputs& in, KVPool& pool) {
  const AutocastOff autocast_off;
  const int64_t n = in.tokens.size(0);
  arrivals_ = torch::zeros({n * pool.shape().kv_heads}, in.tokens.options().dtype(torch::kInt32));
  auto [cos, sin] = model_->rotary_at(in.positions.view({n, 1}));
  cos = cos.view({n, -1});
  sin = sin.view({n, -1});
  auto& body = *model_->model;
  torch::Tensor x =
      fuse_ ? torch::embedding(embed_, in.tokens) : body.embed_tokens(in.tokens).to(dtype_);
  for (size_t i = 0; i < body.layers->size(); ++i) {
    x = fuse_ ? fused_layer(layers_[i], i, x, cos, sin, in, pool)
              : module_layer(i, x, cos, sin, in, pool);
  }
  return fuse_ ? rms_norm(x, final_norm_, model_->config().rms_norm_eps) : body.norm(x).to(dtype_);
}

torch::Tensor DecodeModel::logits(const torch::Tensor& hidden) {
  const AutocastOff autocast_off;
  if (fuse_) return torch::mm(hidden, head_.t());
  return model_->lm_logits(hidden.to(model_->lm_head_weight().scalar_type()));
}

}  // namespace kevin::train
