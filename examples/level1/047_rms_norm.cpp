// CPU solution for level1/047_rms_norm: out = x * rsqrt(mean(x^2, last dim) + eps) * weight,
// eps = 1e-6 (the task's init argument). Inputs: x, then the weight parameter (D,).
// The sum of squares uses 8 partial sums so the loop vectorises.
#include "kevin_abi.h"

#include <cmath>
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
  const float eps = 1e-6f;
  if (args->num_inputs < 2 || args->num_outputs < 1) return 1;
  const kevin_tensor& x = args->inputs[0];
  const kevin_tensor& w = args->inputs[1];
  const kevin_tensor& y = args->outputs[0];
  if (x.dtype != KEVIN_F32 || w.dtype != KEVIN_F32 || y.dtype != KEVIN_F32) return 2;
  if (x.ndim < 1 || w.ndim != 1 || !is_contiguous(x) || !is_contiguous(w)) return 2;
  const int64_t d = x.shape[x.ndim - 1];
  if (w.shape[0] != d) return 3;
  int64_t rows = 1;
  for (int i = 0; i + 1 < x.ndim; ++i) rows *= x.shape[i];
  const float* in = static_cast<const float*>(x.data);
  const float* __restrict__ wt = static_cast<const float*>(w.data);
  float* out = static_cast<float*>(y.data);
  for (int64_t r = 0; r < rows; ++r) {
    const float* __restrict__ xr = in + r * d;
    float* __restrict__ yr = out + r * d;
    float acc[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
    int64_t j = 0;
    for (; j + 8 <= d; j += 8)
      for (int u = 0; u < 8; ++u) acc[u] += xr[j + u] * xr[j + u];
    float ss = 0.f;
    for (int u = 0; u < 8; ++u) ss += acc[u];
    for (; j < d; ++j) ss += xr[j] * xr[j];
    const float inv = 1.0f / std::sqrt(ss / static_cast<float>(d) + eps);
    for (j = 0; j < d; ++j) yr[j] = xr[j] * inv * wt[j];
  }
  return 0;
}
