// qwen2_model.h — the Qwen2 decoder (the QwQ-32B family) in libtorch: token embeddings,
// per layer RMSNorm → grouped-query attention with q/k/v biases and rotary embeddings →
// RMSNorm → SwiGLU MLP, a final RMSNorm and a tied or separate LM head. Parameter names are
// HF transformers' (model.layers.0.self_attn.q_proj.weight, ...), so HF safetensors load
// as they are. Parameters are allocated where and in the dtype ModelInit says (a 32B model
// is built on the GPU in bf16, never on the host). Attention uses scaled-dot-product
// attention on libtorch 2.x and a plain matmul/softmax path on 1.13; grouped-query attention
// never copies K/V per query head where a mask-free kernel can take them as they are.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "train/model/qwen2_config.h"

namespace kevin::train {

// Keys and values of every layer for the positions seen so far ([B, kv_heads, S, head_dim]).
struct KVCache {
  std::vector<torch::Tensor> keys, values;
  int64_t length() const { return keys.empty() || !keys[0].defined() ? 0 : keys[0].size(2); }
};

// Where a model's parameters live and how they start. `random`: HF's initialisation (normal
// with std 0.02, norms at 1, biases at 0); false leaves them uninitialised, for a loader that
// overwrites every one (a random init of 32B parameters costs seconds and proves nothing).
struct ModelInit {
  torch::Device device = torch::kCPU;
  torch::ScalarType dtype = torch::kFloat32;
  bool random = true;
};

// y = weight · x / sqrt(mean(x²) + eps), computed in fp32 and cast back to x's dtype.
// x · rsqrt(mean(x²) + eps) · weight over the last dimension, in fp32, returned in x's dtype
// (`weight` cast to it). One fused kernel each way on CUDA where libtorch has it.
torch::Tensor rms_norm(const torch::Tensor& x, const torch::Tensor& weight, double eps);

class RMSNormImpl : public torch::nn::Module {
 public:
  RMSNormImpl(int64_t width, double eps, const torch::TensorOptions& options = {});
  torch::Tensor forward(const torch::Tensor& x) { return rms_norm(x, weight, eps_); }
  torch::Tensor weight;

 private:
  double eps_;
};
TORCH_MODULE(RMSNorm);

// LoRA adapters (Hu et al.): each targeted projection W gains trainable A [r, in] and
// B [out, r]; the layer computes W x + (alpha / r) · B A x. A starts random, B at zero, so a
// fresh adapter changes nothing. Adapters are fp32 whatever the base's dtype: they are the
// optimizer's master weights (bf16 would lose small AdamW updates to rounding).
struct LoraConfig {
  int64_t rank = 0;  // 0: no adapters (full fine-tuning)
  double alpha = 32;
  std::vector<std::string> targets = {"q_proj",    "k_proj",  "v_proj",   "o_proj",
                                      "gate_proj", "up_proj", "down_proj"};
};

// y = x Wᵀ (+ b) under HF's names (weight, bias), plus an optional LoRA adapter whose
// parameters are lora_A.weight and lora_B.weight, PEFT's names.
class ProjectionImpl : public torch::nn::Module {
 public:
  ProjectionImpl(int64_t in, int64_t out, bool bias, const torch::TensorOptions& options = {});
  torch::Tensor forward(const torch::Tensor& x);
  // Adds an fp32 adapter of `rank` (PEFT's initialisation) on the weight's device.
  void add_lora(int64_t rank, double alpha);
  bool has_lora() const { return !lora_A.is_empty(); }
  // W + scale · B A (W itself without an adapter).
  torch::Tensor merged_weight() const;

  torch::Tensor weight, bias;
  torch::nn::Linear lora_A{nullptr}, lora_B{nullptr};
  double lora_scale = 0;
};
TORCH_MODULE(Projection);

// The projections' outputs of one input, concatenated on the last dimension. Without
// adapters, and with at least as many rows as input features (prefill, training), the weights
// are concatenated first, so the input is cast (under autocast) and multiplied once, and
// backward sums no per-projection input gradients; with fewer rows (decoding) copying the
// weights would cost more than the multiplications, so each projection runs alone.
torch::Tensor project_together(const std::vector<ProjectionImpl*>& projections,
                               const torch::Tensor& x);

// Token embeddings: row `id` of weight [vocab, hidden] (HF's name "weight").
class EmbeddingImpl : public torch::nn::Module {
 public:
  EmbeddingImpl(int64_t vocab, int64_t width, const torch::TensorOptions& options = {});
  torch::Tensor forward(const torch::Tensor& ids);
  torch::Tensor weight;
};
TORCH_MODULE(Embedding);

// Causal attention of q [B, H, T, D] over k, v [B, KV, S, D], H a multiple of KV (query head
// h reads key/value head h / (H / KV)); `mask` [B, 1, T, S] additive, or undefined for plain
// causal attention. Without a mask the keys and values are never copied per query head
// (SDPA's grouped-query mode on libtorch >= 2.5, a grouped matmul before); with a mask they
// are expanded first, which keeps SDPA on its fused masked kernels.
torch::Tensor grouped_attention(const torch::Tensor& q, const torch::Tensor& k,
                                const torch::Tensor& v, const torch::Tensor& mask);

// The attention step of one layer given this call's q [B, H, T, D] and k, v [B, KV, T, D]
// (rotary applied): it stores k and v where its KV cache keeps them and returns the output
// [B, H, T, D]. The dense KVCache path and the paged generator's pool are two of them.
using Attend = std::function<torch::Tensor(const torch::Tensor& q, const torch::Tensor& k,
                                           const torch::Tensor& v)>;

// Where a whole forward's layers attend (Qwen2ForCausalLMImpl::hidden_states_with): the
// Attend of decoder layer `layer`. Borrowed for the forward only.
class LayerAttention {
 public:
  virtual ~LayerAttention() = default;
  virtual torch::Tensor attend(size_t layer, const torch::Tensor& q, const torch::Tensor& k,
                               const torch::Tensor& v) = 0;
};

// Grouped-query self-attention with q/k/v biases and rotary embeddings. With cache tensors,
// appends this call's keys/values to them (they are replaced, not modified in place).
class AttentionImpl : public torch::nn::Module {
 public:
  AttentionImpl(const Qwen2Config& c, const torch::TensorOptions& options = {});
  // x [B, T, H]; cos/sin [B, T, head_dim]; mask [B, 1, T, S] additive (0 / -inf), S = cached + T.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                        const torch::Tensor& mask, torch::Tensor* cache_k, torch::Tensor* cache_v);
  // The projections and rotary of forward, with `attend` in place of its cache and attention.
  torch::Tensor forward_with(const torch::Tensor& x, const torch::Tensor& cos,
                             const torch::Tensor& sin, const Attend& attend);
  Projection q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr}, o_proj{nullptr};

 private:
  int64_t heads_, kv_heads_, head_dim_;
};
TORCH_MODULE(Attention);

// SwiGLU: down(silu(gate(x)) · up(x)).
class MLPImpl : public torch::nn::Module {
 public:
  MLPImpl(const Qwen2Config& c, const torch::TensorOptions& options = {});
  torch::Tensor forward(const torch::Tensor& x);
  Projection gate_proj{nullptr}, up_proj{nullptr}, down_proj{nullptr};
};
TORCH_MODULE(MLP);

// One pre-norm block: x + attn(norm(x)), then h + mlp(norm(h)).
class DecoderLayerImpl : public torch::nn::Module {
 public:
  DecoderLayerImpl(const Qwen2Config& c, const torch::TensorOptions& options = {});
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                        const torch::Tensor& mask, torch::Tensor* cache_k, torch::Tensor* cache_v);
  torch::Tensor forward_with(const torch::Tensor& x, const torch::Tensor& cos,
                             const torch::Tensor& sin, const Attend& attend);
  RMSNorm input_layernorm{nullptr}, post_attention_layernorm{nullptr};
  Attention self_attn{nullptr};
  MLP mlp{nullptr};
};
TORCH_MODULE(DecoderLayer);

// The parameters under HF's "model." prefix: embeddings, layers, final norm.
class Qwen2BodyImpl : public torch::nn::Module {
 public:
  Qwen2BodyImpl(const Qwen2Config& c, const torch::TensorOptions& options = {});
  Embedding embed_tokens{nullptr};
  torch::nn::ModuleList layers{nullptr};
  RMSNorm norm{nullptr};
};
TORCH_MODULE(Qwen2Body);

class Qwen2ForCausalLMImpl : public torch::nn::Module {
 public:
  // Every parameter allocated on init.device in init.dtype, randomly initialised when
  // init.random. Torch's allocation errors (no such device, out of memory) throw: callers at
  // a module boundary catch them (load_qwen2_dir does).
  explicit Qwen2ForCausalLMImpl(Qwen2Config c, const ModelInit& init = {});

  // Logits [B, T, vocab] for `input_ids` [B, T]. `attention_mask` [B, S_total] (1 = token,
  // 0 = padding; S_total = cached + T) may be undefined: no padding, or right padding only,
  // which causal attention never lets a real token see (training batches use this; without a
  // cache it takes the mask-free causal kernels). With `cache`, the keys and values of these
  // positions are appended to it. Positions count real tokens only, so left-padded batches
  // match unpadded sequences.
  torch::Tensor forward(const torch::Tensor& input_ids, const torch::Tensor& attention_mask = {},
                        KVCache* cache = nullptr);
  // forward's two halves: the final-normed hidden states [B, T, hidden] (same arguments), and
  // the LM head applied to hidden states of any leading shape. Training takes the head only
  // at the positions it scores, which saves the vocabulary-wide work on prompt tokens.
  torch::Tensor hidden_states(const torch::Tensor& input_ids,
                              const torch::Tensor& attention_mask = {}, KVCache* cache = nullptr);
  torch::Tensor lm_logits(const torch::Tensor& hidden);
  // Final-normed hidden states [B, T, hidden] of `input_ids` [B, T] at rotary `positions`
  // [B, T] (int64), each layer attending through `attention` (the paged generator's cache).
  // No mask, padding or KVCache: what each query sees is the LayerAttention's to decide.
  torch::Tensor hidden_states_with(const torch::Tensor& input_ids, const torch::Tensor& positions,
                                   LayerAttention& attention);
  // The LM head's weight [vocab, hidden] that lm_logits multiplies by: lm_head's, or the token
  // embeddings' when tied. The parameter itself (gradients reach it), for chunked_scores.h.
  torch::Tensor lm_head_weight() const;

  // How load_weights fills one parameter from its checkpoint tensor (same shape; any device
  // and dtype). The default is Tensor::copy_; a loader passes one that bounds host memory.
  using CopyWeight =
      std::function<Status(const torch::Tensor& source, const torch::Tensor& parameter)>;
  // Copies `weights` (HF names) into the parameters, checking every name and shape before the
  // first copy. kInvalidArgument naming the tensor for a missing weight or a shape mismatch;
  // unknown names are errors too (a wrong checkpoint). `lm_head.weight` may be absent when the
  // embeddings are tied. `copy`'s errors are returned as they are.
  Status load_weights(const std::map<std::string, torch::Tensor>& weights,
                      const CopyWeight& copy = {});
  // Every base-model parameter by HF name (tied head not repeated; adapters left out).
  std::vector<std::pair<std::string, torch::Tensor>> named_weights() const;
  // named_weights with every adapter folded into its projection's weight (detached copies
  // for adapted projections): the weights of the fine-tuned model as a plain checkpoint.
  std::vector<std::pair<std::string, torch::Tensor>> merged_weights() const;
  // merged_weights on demand: each function returns that weight, merged when its projection
  // has an adapter (a new tensor each call), so an exporter can hold a few at a time. The
  // functions borrow this model and must not outlive it.
  std::vector<std::pair<std::string, std::function<torch::Tensor()>>> merged_weight_makers() const;

  // Adds adapters to every projection named in `lora.targets` and freezes every base
  // parameter. kInvalidArgument for rank < 1, an unknown target, or adapters already added.
  Status add_lora(const LoraConfig& lora);
  const LoraConfig& lora() const { return lora_; }
  // The adapters' parameters by name (model.layers.0.self_attn.q_proj.lora_A.weight, ...).
  std::vector<std::pair<std::string, torch::Tensor>> lora_weights() const;
  // Parameters that require gradients: the adapters with LoRA, else every weight.
  std::vector<torch::Tensor> trainable_parameters() const;

  // With checkpointing on, training forwards keep only each layer's input and recompute the
  // layer in backward (less memory, about a third more compute). Off by default.
  void set_activation_checkpointing(bool on) { checkpointing_ = on; }

  // The rotary angles' cos and sin for `positions` [B, T] (int64): [B, T, head_dim] each,
  // fp32, on the positions' device.
  std::pair<torch::Tensor, torch::Tensor> rotary_at(const torch::Tensor& positions);

  const Qwen2Config& config() const { return config_; }
  Qwen2Body model{nullptr};
  Projection lm_head{nullptr};  // null when tied

 private:
  Qwen2Config config_;

  torch::Tensor inv_freq_;  // fp32, moved to the input's device on first use there
  bool checkpointing_ = false;
  LoraConfig lora_;  // rank 0 until add_lora
};
TORCH_MODULE(Qwen2ForCausalLM);

// The rotary angles' cos and sin for `positions` [B, T]: [B, T, head_dim] each (HF's
// rotate-half layout: the frequencies repeated twice).
std::pair<torch::Tensor, torch::Tensor> rotary_cos_sin(const torch::Tensor& positions,
                                                       const torch::Tensor& inv_freq,
                                                       torch::Dtype dtype);

}  // namespace kevin::train
