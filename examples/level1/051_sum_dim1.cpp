// CPU solution for level1/051_sum_dim1: out[b, n] = sum_d x[b, d, n] for x of shape (B, D, N).
// Rows of x are streamed in memory order and accumulated into the output row, so the inner
// loop is a contiguous, vectorisable add.
#include "kevin_abi.h"

#include <cstdint>

static inline bool is_contiguous(const kevin_tensor& t) {
  int64_t expect = 1;
  for (int i = t.ndim - 1; i >= 0; --i) {
    if (t.shape[i] != 1 && t.strides[i] != expect) return false;
    expect *= t.shape[i];
  }
  return true;
}

extern "C" int kevin_forward(const kevin_args* args) {
  if (args->num_inputs < 1 || args->num_outputs < 1) return 1;
  const kevin_tensor& x = args->inputs[0];
  const kevin_tensor& y = args->outputs[0];
  if (x.dtype != KEVIN_F32 || y.dtype != KEVIN_F32 || x.ndim != 3 || !is_contiguous(x)) return 2;
  const int64_t b_n = x.shape[0], d_n = x.shape[1], n_n = x.shape[2];
  const float* in = static_cast<const float*>(x.data);
  float* out = static_cast<float*>(y.data);
  for (int64_t b = 0; b < b_n; ++b) {
    float* __restrict__ o = out + b * n_n;
    for (int64_t n = 0; n < n_n; ++n) o[n] = 0.0f;
    for (int64_t d = 0; d < d_n; ++d) {
      const float* __restrict__ row = in + (b * d_n + d) * n_n;
      for (int64_t n = 0; n < n_n; ++n) o[n] += row[n];
    }
  }
  return 0;
}
