// qwen2_model.h — the Qwen2 decoder (the QwQ-32B family) in libtorch: token embeddings,
// per layer RMSNorm → grouped-query attention with q/k/v biases and rotary embeddings →
// RMSNorm → SwiGLU MLP, a final RMSNorm and a tied or separate LM head. Parameter names are
// HF transformers' (model.layers.0.self_attn.q_proj.weight, ...), so HF safetensors load
// as they are. Attention uses scaled-dot-product attention on libtorch 2.x and a plain
// matmul/softmax path on 1.13. A KV cache supports incremental decoding.
#pragma once

#include <torch/torch.h>

#include <map>
#include <string>
#include <vector>

#include "core/status.h"
#include "train/model/qwen2_config.h"

namespace kevin::train {

// Keys and values of every layer for the positions seen so far ([B, kv_heads, S, head_dim]).
struct KVCache {
  std::vector<torch::Tensor> keys, values;
  int64_t length() const { return keys.empty() || !keys[0].defined() ? 0 : keys[0].size(2); }
};

// y = weight · x / sqrt(mean(x²) + eps), computed in fp32 and cast back to x's dtype.
class RMSNormImpl : public torch::nn::Module {
 public:
  RMSNormImpl(int64_t width, double eps);
  torch::Tensor forward(const torch::Tensor& x);
  torch::Tensor weight;

 private:
  double eps_;
};
TORCH_MODULE(RMSNorm);

// LoRA adapters (Hu et al.): each targeted projection W gains trainable A [r, in] and
// B [out, r]; the layer computes W x + (alpha / r) · B A x. A starts random, B at zero, so a
// fresh adapter changes nothing.
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
  ProjectionImpl(int64_t in, int64_t out, bool bias);
  torch::Tensor forward(const torch::Tensor& x);
  // Adds an adapter of `rank` (PEFT's initialisation), on the weight's device and dtype.
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
// adapters the weights are concatenated first, so the input is cast (under autocast) and
// multiplied once, and backward sums no per-projection input gradients.
torch::Tensor project_together(const std::vector<ProjectionImpl*>& projections,
                               const torch::Tensor& x);

// Grouped-query self-attention with q/k/v biases and rotary embeddings. With cache tensors,
// appends this call's keys/values to them (they are replaced, not modified in place).
class AttentionImpl : public torch::nn::Module {
 public:
  explicit AttentionImpl(const Qwen2Config& c);
  // x [B, T, H]; cos/sin [B, T, head_dim]; mask [B, 1, T, S] additive (0 / -inf), S = cached + T.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                        const torch::Tensor& mask, torch::Tensor* cache_k, torch::Tensor* cache_v);
  Projection q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr}, o_proj{nullptr};

 private:
  int64_t heads_, kv_heads_, head_dim_;
};
TORCH_MODULE(Attention);

// SwiGLU: down(silu(gate(x)) · up(x)).
class MLPImpl : public torch::nn::Module {
 public:
  explicit MLPImpl(const Qwen2Config& c);
  torch::Tensor forward(const torch::Tensor& x);
  Projection gate_proj{nullptr}, up_proj{nullptr}, down_proj{nullptr};
};
TORCH_MODULE(MLP);

// One pre-norm block: x + attn(norm(x)), then h + mlp(norm(h)).
class DecoderLayerImpl : public torch::nn::Module {
 public:
  explicit DecoderLayerImpl(const Qwen2Config& c);
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                        const torch::Tensor& mask, torch::Tensor* cache_k, torch::Tensor* cache_v);
  RMSNorm input_layernorm{nullptr}, post_attention_layernorm{nullptr};
  Attention self_attn{nullptr};
  MLP mlp{nullptr};
};
TORCH_MODULE(DecoderLayer);

// The parameters under HF's "model." prefix: embeddings, layers, final norm.
class Qwen2BodyImpl : public torch::nn::Module {
 public:
  explicit Qwen2BodyImpl(const Qwen2Config& c);
  torch::nn::Embedding embed_tokens{nullptr};
  torch::nn::ModuleList layers{nullptr};
  RMSNorm norm{nullptr};
};
TORCH_MODULE(Qwen2Body);

class Qwen2ForCausalLMImpl : public torch::nn::Module {
 public:
  // Randomly initialised (normal, std 0.02, as HF's initializer_range default; norms at 1).
  explicit Qwen2ForCausalLMImpl(Qwen2Config c);

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
  // The LM head's weight [vocab, hidden] that lm_logits multiplies by: lm_head's, or the token
  // embeddings' when tied. The parameter itself (gradients reach it), for chunked_scores.h.
  torch::Tensor lm_head_weight() const;

  // Copies `weights` (HF names) into the parameters. kInvalidArgument naming the tensor for a
  // missing weight or a shape mismatch; unknown names are errors too (a wrong checkpoint).
  // `lm_head.weight` may be absent when the embeddings are tied.
  Status load_weights(const std::map<std::string, torch::Tensor>& weights);
  // Every base-model parameter by HF name (tied head not repeated; adapters left out).
  std::vector<std::pair<std::string, torch::Tensor>> named_weights() const;
  // named_weights with every adapter folded into its projection's weight (detached copies
  // for adapted projections): the weights of the fine-tuned model as a plain checkpoint.
  std::vector<std::pair<std::string, torch::Tensor>> merged_weights() const;

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

  const Qwen2Config& config() const { return config_; }
  Qwen2Body model{nullptr};
  torch::nn::Linear lm_head{nullptr};  // null when tied

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
