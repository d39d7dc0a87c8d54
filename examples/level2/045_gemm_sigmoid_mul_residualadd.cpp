// CPU example for level2/045_gemm_sigmoid_mul_residualadd: y = x @ W^T + b;
// out = sigmoid(y) * w + y. W is transposed once into the workspace so the GEMM runs in
// contiguous "axpy" order; the epilogue is applied to each output row while it is hot.
#include <cmath>
#include <cstdint>
#include "kevin_abi.h"

// Inputs (state_dict order after x): weight (per-feature w), linear.weight, linear.bias.
extern "C" int kevin_forward(const kevin_args* args) {
  if (args->num_inputs != 4 || args->num_outputs != 1) return 1;
  const kevin_tensor& tx = args->inputs[0];
  const kevin_tensor& tw = args->inputs[1];   // (OUT)
  const kevin_tensor& tW = args->inputs[2];   // (OUT, IN)
  const kevin_tensor& tb = args->inputs[3];   // (OUT)
  const kevin_tensor& to = args->outputs[0];  // (BATCH, OUT)
  if (tx.ndim != 2 || tw.ndim != 1 || tW.ndim != 2 || tb.ndim != 1 || to.ndim != 2) return 2;
  const int64_t B = tx.shape[0], K = tx.shape[1], N = tW.shape[0];
  if (tW.shape[1] != K || tw.shape[0] != N || tb.shape[0] != N) return 3;
  if (to.shape[0] != B || to.shape[1] != N) return 3;
  if (tx.strides[1] != 1 || tW.strides[1] != 1 || tw.strides[0] != 1 || tb.strides[0] != 1)
    return 4;
  if (static_cast<size_t>(K * N) * sizeof(float) > args->workspace_bytes) return 5;

  const float* x = static_cast<const float*>(tx.data);
  const float* w = static_cast<const float*>(tw.data);
  const float* W = static_cast<const float*>(tW.data);
  const float* bias = static_cast<const float*>(tb.data);
  float* out = static_cast<float*>(to.data);
  float* wt = static_cast<float*>(args->workspace);  // W^T, K x N

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
    for (int64_t j = 0; j < N; ++j) {
      const float y = c[j];
      c[j] = w[j] / (1.0f + std::exp(-y)) + y;
    }
  }
  return 0;
}
