// CPU example for level2/037_gemm_layernorm_gelu_scale: y = x @ W^T + b, then per row
// LayerNorm (eps 1e-5, learned gamma/beta), exact GELU, times 0.5. W is transposed once into
// the workspace; each output row is produced, normalised and activated while in cache.
#include <cmath>
#include <cstdint>
#include "kevin_abi.h"

namespace {
constexpr float kEps = 1e-5f;   // nn.LayerNorm default
constexpr float kScale = 0.5f;  // init arg "scale"
}  // namespace

// Inputs: x, linear.weight (OUT, IN), linear.bias, norm.weight, norm.bias.
extern "C" int kevin_forward(const kevin_args* args) {
  if (args->num_inputs != 5 || args->num_outputs != 1) return 1;
  const kevin_tensor& tx = args->inputs[0];
  const kevin_tensor& tW = args->inputs[1];
  const kevin_tensor& tb = args->inputs[2];
  const kevin_tensor& tg = args->inputs[3];
  const kevin_tensor& tbeta = args->inputs[4];
  const kevin_tensor& to = args->outputs[0];
  if (tx.ndim != 2 || tW.ndim != 2 || tb.ndim != 1 || tg.ndim != 1 || tbeta.ndim != 1) return 2;
  const int64_t B = tx.shape[0], K = tx.shape[1], N = tW.shape[0];
  if (tW.shape[1] != K || tb.shape[0] != N || tg.shape[0] != N || tbeta.shape[0] != N) return 3;
  if (to.ndim != 2 || to.shape[0] != B || to.shape[1] != N) return 3;
  if (tx.strides[1] != 1 || tW.strides[1] != 1) return 4;
  if (static_cast<size_t>(K * N) * sizeof(float) > args->workspace_bytes) return 5;

  const float* x = static_cast<const float*>(tx.data);
  const float* W = static_cast<const float*>(tW.data);
  const float* bias = static_cast<const float*>(tb.data);
  const float* gamma = static_cast<const float*>(tg.data);
  const float* beta = static_cast<const float*>(tbeta.data);
  float* out = static_cast<float*>(to.data);
  float* wt = static_cast<float*>(args->workspace);

  const int64_t ldW = tW.strides[0], ldx = tx.strides[0];
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) wt[k * N + n] = W[n * ldW + k];

  for (int64_t i = 0; i < B; ++i) {
    float* c = out + i * N;
    for (int64_t j = 0; j < N; ++j) c[j] = bias[j];
    const float* xrow = x + i * ldx;
    for (int64_t k = 0; k < K; ++k) {
      const float xik = xrow[k];
      const float* wrow = wt + k * N;
      for (int64_t j = 0; j < N; ++j) c[j] += xik * wrow[j];
    }
    double sum = 0.0;
    for (int64_t j = 0; j < N; ++j) sum += c[j];
    const float mean = static_cast<float>(sum / N);
    double sq = 0.0;
    for (int64_t j = 0; j < N; ++j) {
      const double d = c[j] - mean;
      sq += d * d;
    }
    const float rstd = 1.0f / std::sqrt(static_cast<float>(sq / N) + kEps);
    for (int64_t j = 0; j < N; ++j) {
      const float v = (c[j] - mean) * rstd * gamma[j] + beta[j];
      c[j] = kScale * 0.5f * v * (1.0f + std::erf(v * 0.70710678118654752f));
    }
  }
  return 0;
}
