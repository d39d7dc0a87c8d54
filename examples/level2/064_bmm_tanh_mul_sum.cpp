// CPU example for level2/064_bmm_tanh_mul_sum:
// out[b, i, 0] = sum_j tanh((a[b] @ b[b])[i, j]) * w[j].
// Each row of the product is formed in the workspace in "axpy" order, then the tanh-weighted
// row sum is taken in the same pass, so the B x M x N product never exists in full.
#include <cmath>
#include <cstdint>
#include "kevin_abi.h"

// Inputs: a (B, M, K), b (B, K, N), weight (N). Output (B, M, 1).
extern "C" int kevin_forward(const kevin_args* args) {
  if (args->num_inputs != 3 || args->num_outputs != 1) return 1;
  const kevin_tensor& ta = args->inputs[0];
  const kevin_tensor& tb = args->inputs[1];
  const kevin_tensor& tw = args->inputs[2];
  const kevin_tensor& to = args->outputs[0];
  if (ta.ndim != 3 || tb.ndim != 3 || tw.ndim != 1 || to.ndim != 3) return 2;
  const int64_t B = ta.shape[0], M = ta.shape[1], K = ta.shape[2], N = tb.shape[2];
  if (tb.shape[0] != B || tb.shape[1] != K || tw.shape[0] != N) return 3;
  if (to.shape[0] != B || to.shape[1] != M || to.shape[2] != 1) return 3;
  if (ta.strides[2] != 1 || tb.strides[2] != 1 || tw.strides[0] != 1) return 4;
  if (static_cast<size_t>(N) * sizeof(float) > args->workspace_bytes) return 5;

  const float* a = static_cast<const float*>(ta.data);
  const float* bm = static_cast<const float*>(tb.data);
  const float* w = static_cast<const float*>(tw.data);
  float* out = static_cast<float*>(to.data);
  float* c = static_cast<float*>(args->workspace);

  for (int64_t bi = 0; bi < B; ++bi) {
    const float* ab = a + bi * ta.strides[0];
    const float* bb = bm + bi * tb.strides[0];
    for (int64_t i = 0; i < M; ++i) {
      for (int64_t j = 0; j < N; ++j) c[j] = 0.0f;
      const float* arow = ab + i * ta.strides[1];
      for (int64_t k = 0; k < K; ++k) {
        const float aik = arow[k];
        const float* brow = bb + k * tb.strides[1];
        for (int64_t j = 0; j < N; ++j) c[j] += aik * brow[j];
      }
      float acc = 0.0f;
      for (int64_t j = 0; j < N; ++j) acc += std::tanh(c[j]) * w[j];
      out[bi * M + i] = acc;
    }
  }
  return 0;
}
