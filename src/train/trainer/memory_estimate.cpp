// memory_estimate.cpp — the arithmetic behind estimate_memory: parameter counts by projection,
// per-token activation bytes of a decoder layer, logits and KV cache sizes.
#include "train/trainer/memory_estimate.h"

#include <algorithm>
#include <map>
#include <string>

namespace kevin::train {
namespace {

constexpr double kGiB = double(1ull << 30);
constexpr double kFp32 = 4;

// (in + out) of each projection an adapter can wrap: an adapter adds rank × (in + out).
std::map<std::string, int64_t> adapter_sides(const Qwen2Config& c) {
  const int64_t h = c.hidden_size, kv = c.num_key_value_heads * c.head_dim(),
                q = c.num_attention_heads * c.head_dim(), i = c.intermediate_size;
  return {{"q_proj", h + q},    {"k_proj", h + kv}, {"v_proj", h + kv},  {"o_proj", q + h},
          {"gate_proj", h + i}, {"up_proj", h + i}, {"down_proj", i + h}};
}

int64_t adapter_parameters(const Qwen2Config& c, const LoraConfig& lora) {
  const auto sides = adapter_sides(c);
  int64_t n = 0;
  for (const auto& t : lora.targets) {
    if (auto it = sides.find(t); it != sides.end())
      n += lora.rank * it->second * c.num_hidden_layers;
  }
  return n;
}

}  // namespace

double layer_bytes_per_token(const Qwen2Config& c, const LoraConfig& lora, int e) {
  const double h = static_cast<double>(c.hidden_size),
               q = static_cast<double>(c.num_attention_heads * c.head_dim()),
               kv = static_cast<double>(c.num_key_value_heads * c.head_dim()),
               i = static_cast<double>(c.intermediate_size);
  // Saved by the forward for the backward: both norms' outputs (h each), q/k/v after rotary
  // (q + 2 kv), the attention output (q), gate and up (2 i) and the SwiGLU product (i), plus
  // each adapter's rank-wide intermediate. fp32 statistics (norms, attention) are small.
  const double adapters = lora.rank > 0 ? static_cast<double>(lora.rank) * 7 : 0;
  const double saved = e * (2 * h + q + 2 * kv + q + 3 * i + adapters);
  // Alive together at the MLP's backward, the layer's largest: the gradients of gate/up
  // (2 i) and of the SwiGLU product (i), and the residual's gradient (h, fp32 when it
  // accumulates across the layer).
  const double gradients = e * 3 * i + kFp32 * h;
  return saved + gradients;
}

MemoryEstimate estimate_memory(const Qwen2Config& c, const LoraConfig& lora, const Workload& w) {
  MemoryEstimate m;
  m.parameters = c.parameter_count();
  m.trainable = lora.rank > 0 ? adapter_parameters(c, lora) : m.parameters;
  const double adapters = lora.rank > 0 ? static_cast<double>(m.trainable) : 0;
  m.weights_gib = (w.base_bytes * static_cast<double>(m.parameters) + kFp32 * adapters) / kGiB;
  m.gradients_gib = kFp32 * static_cast<double>(m.trainable) / kGiB;
  const double moments_gib = 2 * kFp32 * static_cast<double>(m.trainable) / kGiB;
  (w.optimizer_on_host ? m.host_optimizer_gib : m.optimizer_gib) = moments_gib;

  const double tokens = static_cast<double>(w.micro_batch_tokens);
  const double layers = static_cast<double>(c.num_hidden_layers);
  const double per_layer = layer_bytes_per_token(c, lora, w.base_bytes) * tokens;
  const double checkpoints = layers * tokens * static_cast<double>(c.hidden_size) * w.base_bytes;
  m.activations_gib = (w.checkpointing ? checkpoints + per_layer : layers * per_layer) / kGiB;

  // The logits and their gradient in the activation dtype, for a chunk of rows or for all.
  const int64_t rows =
      w.logit_chunk_rows > 0 ? std::min(w.logit_chunk_rows, w.scored_tokens) : w.scored_tokens;
  m.logits_gib =
      2.0 * w.base_bytes * static_cast<double>(rows) * static_cast<double>(c.vocab_size) / kGiB;

  // Keys and values of every layer, in the activation dtype.
  const double kv_bytes_per_token =
      2.0 * layers * static_cast<double>(c.num_key_value_heads * c.head_dim()) * w.base_bytes;
  m.kv_cache_gib = kv_bytes_per_token * static_cast<double>(w.generation_sequences) *
                   static_cast<double>(w.generation_tokens) / kGiB;
  return m;
}

}  // namespace kevin::train
