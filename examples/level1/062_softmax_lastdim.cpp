// CPU solution for level1/062_softmax_lastdim: softmax over the last dimension.
// Per row: max, then e = exp(x - max) written to the output while summing, then a scale by
// 1/sum. SSE2 intrinsics, 4 lanes; exp is a polynomial with relative error ~2e-7.
#include "kevin_abi.h"

#include <immintrin.h>

#include <cstdint>
#include <cstring>

static inline bool is_contiguous(const kevin_tensor& t) {
  int64_t expect = 1;
  for (int i = t.ndim - 1; i >= 0; --i) {
    if (t.shape[i] != 1 && t.strides[i] != expect) return false;
    expect *= t.shape[i];
  }
  return true;
}

// exp(y) for y <= 0 (arguments below -87 give ~1e-38, far below the tolerance).
static inline float exp_nonpos(float y) {
  y = y < -87.0f ? -87.0f : y;
  const float n = static_cast<float>(static_cast<int32_t>(y * 1.44269504089f - 0.5f));
  float r = y - n * 0.693359375f;
  r = r + n * 2.12194440e-4f;
  float p = 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof(scale));
  return p * scale;
}

static inline __m128 exp_nonpos4(__m128 y) {
  y = _mm_max_ps(y, _mm_set1_ps(-87.0f));
  const __m128i ni =
      _mm_cvttps_epi32(_mm_sub_ps(_mm_mul_ps(y, _mm_set1_ps(1.44269504089f)), _mm_set1_ps(0.5f)));
  const __m128 n = _mm_cvtepi32_ps(ni);
  __m128 r = _mm_sub_ps(y, _mm_mul_ps(n, _mm_set1_ps(0.693359375f)));
  r = _mm_add_ps(r, _mm_mul_ps(n, _mm_set1_ps(2.12194440e-4f)));
  __m128 p = _mm_set1_ps(1.0f / 720.0f);
  p = _mm_add_ps(_mm_mul_ps(p, r), _mm_set1_ps(1.0f / 120.0f));
  p = _mm_add_ps(_mm_mul_ps(p, r), _mm_set1_ps(1.0f / 24.0f));
  p = _mm_add_ps(_mm_mul_ps(p, r), _mm_set1_ps(1.0f / 6.0f));
  p = _mm_add_ps(_mm_mul_ps(p, r), _mm_set1_ps(0.5f));
  p = _mm_add_ps(_mm_mul_ps(p, r), _mm_set1_ps(1.0f));
  p = _mm_add_ps(_mm_mul_ps(p, r), _mm_set1_ps(1.0f));
  const __m128i bits = _mm_slli_epi32(_mm_add_epi32(ni, _mm_set1_epi32(127)), 23);
  return _mm_mul_ps(p, _mm_castsi128_ps(bits));
}

static inline float hsum(__m128 v) {
  float t[4];
  _mm_storeu_ps(t, v);
  return (t[0] + t[1]) + (t[2] + t[3]);
}

static inline float hmax(__m128 v) {
  float t[4];
  _mm_storeu_ps(t, v);
  const float a = t[0] > t[1] ? t[0] : t[1];
  const float b = t[2] > t[3] ? t[2] : t[3];
  return a > b ? a : b;
}

static void softmax_row(const float* x, float* y, int64_t d) {
  __m128 m0 = _mm_set1_ps(-3.402823466e38f), m1 = m0;
  int64_t j = 0;
  for (; j + 8 <= d; j += 8) {
    m0 = _mm_max_ps(m0, _mm_loadu_ps(x + j));
    m1 = _mm_max_ps(m1, _mm_loadu_ps(x + j + 4));
  }
  float m = hmax(_mm_max_ps(m0, m1));
  for (; j < d; ++j) m = x[j] > m ? x[j] : m;

  const __m128 mv = _mm_set1_ps(m);
  __m128 s0 = _mm_setzero_ps(), s1 = _mm_setzero_ps();
  j = 0;
  for (; j + 8 <= d; j += 8) {
    const __m128 e0 = exp_nonpos4(_mm_sub_ps(_mm_loadu_ps(x + j), mv));
    const __m128 e1 = exp_nonpos4(_mm_sub_ps(_mm_loadu_ps(x + j + 4), mv));
    _mm_storeu_ps(y + j, e0);
    _mm_storeu_ps(y + j + 4, e1);
    s0 = _mm_add_ps(s0, e0);
    s1 = _mm_add_ps(s1, e1);
  }
  float s = hsum(_mm_add_ps(s0, s1));
  for (; j < d; ++j) {
    const float e = exp_nonpos(x[j] - m);
    y[j] = e;
    s += e;
  }
  const float inv = 1.0f / s;
  const __m128 iv = _mm_set1_ps(inv);
  j = 0;
  for (; j + 4 <= d; j += 4) _mm_storeu_ps(y + j, _mm_mul_ps(_mm_loadu_ps(y + j), iv));
  for (; j < d; ++j) y[j] *= inv;
}

extern "C" int kevin_forward(const kevin_args* args) {
  if (args->num_inputs < 1 || args->num_outputs < 1) return 1;
  const kevin_tensor& x = args->inputs[0];
  const kevin_tensor& y = args->outputs[0];
  if (x.dtype != KEVIN_F32 || y.dtype != KEVIN_F32 || x.ndim < 1 || !is_contiguous(x)) return 2;
  const int64_t d = x.shape[x.ndim - 1];
  int64_t rows = 1;
  for (int i = 0; i + 1 < x.ndim; ++i) rows *= x.shape[i];
  if (d <= 0) return 0;
  const float* in = static_cast<const float*>(x.data);
  float* out = static_cast<float*>(y.data);
  for (int64_t r = 0; r < rows; ++r) softmax_row(in + r * d, out + r * d, d);
  return 0;
}
