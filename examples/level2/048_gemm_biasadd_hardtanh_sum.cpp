// CPU example for level2/048_gemm_biasadd_hardtanh_sum: y = x @ W^T + b; out[i, 0] =
// sum_j clamp(y[i, j] + bias[j], -1, 1). W is transposed once into the workspace so each output
// row is accumulated in "axpy" order, then clipped and summed while it is still in cache.
#include <algorithm>
#include <cstdint>
#include "kevin_abi.h"

// Inputs (state_dict order after x): bias (OUT), linear.weight (OUT, IN), linear.bias (OUT).
extern "C" int kevin_forward(const kevin_args* args) {
  if (args->num_inputs != 4 || args->num_outputs != 1) return 1;
  const kevin_tensor& tx = args->inputs[0];
  const kevin_tensor& tb2 = args->inputs[1];
  const kevin_tensor& tW = args->inputs[2];
  const kevin_tensor& tb = args->inputs[3];
  const kevin_tensor& to = args->outputs[0];
  if (tx.ndim != 2 || tb2.ndim != 1 || tW.ndim != 2 || tb.ndim != 1 || to.ndim != 2) return 2;
  const int64_t B = tx.shape[0], K = tx.shape[1], N = tW.shape[0];
  if (tW.shape[1] != K || tb2.shape[0] != N || tb.shape[0] != N) return 3;
  if (to.shape[0] != B || to.shape[1] != 1) return 3;
  if (tx.strides[1] != 1 || tW.strides[1] != 1 || tb2.strides[0] != 1 || tb.strides[0] != 1)
    return 4;
  // workspace: W^T (K x N) followed by one row of N accumulators
  if (static_cast<size_t>(K * N + N) * sizeof(float) > args->workspace_bytes) return 5;

  const float* x = static_cast<const float*>(tx.data);
  const float* b2 = static_cast<const float*>(tb2.data);
  const float* W = static_cast<const float*>(tW.data);
  const float* bias = static_cast<const float*>(tb.data);
  float* out = static_cast<float*>(to.data);
  float* wt = static_cast<float*>(args->workspace);
  float* c = wt + K * N;

  const int64_t ldW = tW.strides[0], ldx = tx.strides[0];
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) wt[k * N + n] = W[n * ldW + k];

  for (int64_t i = 0; i < B; ++i) {
    for (int64_t j = 0; j < N; ++j) c[j] = bias[j];
    const float* xrow = x + i * ldx;
    for (int64_t k = 0; k < K; ++k) {
      const float xik = xrow[k];
      const float* wrow = wt + k * N;
      for (int64_t j = 0; j < N; ++j) c[j] += xik * wrow[j];
    }
    float acc = 0.0f;
    for (int64_t j = 0; j < N; ++j) acc += std::min(1.0f, std::max(-1.0f, c[j] + b2[j]));
    out[i * to.strides[0]] = acc;
  }
  return 0;
}
