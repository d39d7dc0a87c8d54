// CPU example for level2/060_bmm_scale_softmax_mul_sum: for each batch and row i,
// s = 2.0 * (a[b] @ b[b])[i, :], out[b, i] = sum_j softmax(s)_j * values_j.
// One row of scores is built in the workspace ("axpy" order), then reduced in one pass.
#include <cmath>
#include <cstdint>
#include "kevin_abi.h"

namespace {
constexpr float kScale = 2.0f;  // init arg "scale"
}

// Inputs: a (B, M, K), b (B, K, N), values (N). Output (B, M).
extern "C" int kevin_forward(const kevin_args* args) {
  if (args->num_inputs != 3 || args->num_outputs != 1) return 1;
  const kevin_tensor& ta = args->inputs[0];
  const kevin_tensor& tb = args->inputs[1];
  const kevin_tensor& tv = args->inputs[2];
  const kevin_tensor& to = args->outputs[0];
  if (ta.ndim != 3 || tb.ndim != 3 || tv.ndim != 1 || to.ndim != 2) return 2;
  const int64_t B = ta.shape[0], M = ta.shape[1], K = ta.shape[2], N = tb.shape[2];
  if (tb.shape[0] != B || tb.shape[1] != K || tv.shape[0] != N) return 3;
  if (to.shape[0] != B || to.shape[1] != M) return 3;
  if (ta.strides[2] != 1 || tb.strides[2] != 1 || tv.strides[0] != 1) return 4;
  if (static_cast<size_t>(N) * sizeof(float) > args->workspace_bytes) return 5;

  const float* a = static_cast<const float*>(ta.data);
  const float* bm = static_cast<const float*>(tb.data);
  const float* v = static_cast<const float*>(tv.data);
  float* out = static_cast<float*>(to.data);
  float* s = static_cast<float*>(args->workspace);

  for (int64_t bi = 0; bi < B; ++bi) {
    const float* ab = a + bi * ta.strides[0];
    const float* bb = bm + bi * tb.strides[0];
    for (int64_t i = 0; i < M; ++i) {
      for (int64_t j = 0; j < N; ++j) s[j] = 0.0f;
      const float* arow = ab + i * ta.strides[1];
      for (int64_t k = 0; k < K; ++k) {
        const float aik = arow[k];
        const float* brow = bb + k * tb.strides[1];
        for (int64_t j = 0; j < N; ++j) s[j] += aik * brow[j];
      }
      float mx = -INFINITY;
      for (int64_t j = 0; j < N; ++j) mx = std::fmax(mx, s[j] * kScale);
      float den = 0.0f, num = 0.0f;
      for (int64_t j = 0; j < N; ++j) {
        const float e = std::exp(s[j] * kScale - mx);
        den += e;
        num += e * v[j];
      }
      out[bi * M + i] = num / den;
    }
  }
  return 0;
}
