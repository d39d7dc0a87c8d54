// CPU solution for level1/028_gelu: exact GELU, out = 0.5 * x * (1 + erf(x / sqrt(2))).
// erf uses a rational-times-exponential approximation (abs. error < 3e-7) with a hand-written
// exp; the main loop runs 4 lanes at a time with SSE2 intrinsics, the tail in scalar code.
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

// Coefficients: erf(a) ~ 1 - t * P(t) * exp(-a^2), t = 1 / (1 + kP * a), a >= 0.
static const float kP = 0.3275911f;
static const float kA1 = 0.254829592f, kA2 = -0.284496736f, kA3 = 1.421413741f;
static const float kA4 = -1.453152027f, kA5 = 1.061405429f;

// exp(y) for y <= 0: y = n*ln2 + r with |r| <= ln2/2 (Cody-Waite), degree-6 Taylor polynomial.
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

static inline float gelu1(float x) {
  const float z = x * 0.70710678118654752f;
  const float a = z < 0.0f ? -z : z;
  const float t = 1.0f / (1.0f + kP * a);
  const float poly = (((kA5 * t + kA4) * t + kA3) * t + kA2) * t + kA1;
  const float q = poly * t * exp_nonpos(-a * a);  // q = 1 - erf(|z|)
  return 0.5f * x * (z < 0.0f ? q : 2.0f - q);
}

static inline __m128 gelu4(__m128 x) {
  const __m128 z = _mm_mul_ps(x, _mm_set1_ps(0.70710678118654752f));
  const __m128 a = _mm_andnot_ps(_mm_set1_ps(-0.0f), z);
  const __m128 t =
      _mm_div_ps(_mm_set1_ps(1.0f), _mm_add_ps(_mm_set1_ps(1.0f), _mm_mul_ps(_mm_set1_ps(kP), a)));
  __m128 poly = _mm_add_ps(_mm_mul_ps(_mm_set1_ps(kA5), t), _mm_set1_ps(kA4));
  poly = _mm_add_ps(_mm_mul_ps(poly, t), _mm_set1_ps(kA3));
  poly = _mm_add_ps(_mm_mul_ps(poly, t), _mm_set1_ps(kA2));
  poly = _mm_add_ps(_mm_mul_ps(poly, t), _mm_set1_ps(kA1));
  const __m128 e = exp_nonpos4(_mm_sub_ps(_mm_setzero_ps(), _mm_mul_ps(a, a)));
  const __m128 q = _mm_mul_ps(_mm_mul_ps(poly, t), e);
  const __m128 neg = _mm_cmplt_ps(z, _mm_setzero_ps());
  const __m128 one_plus_erf =
      _mm_or_ps(_mm_and_ps(neg, q), _mm_andnot_ps(neg, _mm_sub_ps(_mm_set1_ps(2.0f), q)));
  return _mm_mul_ps(_mm_mul_ps(_mm_set1_ps(0.5f), x), one_plus_erf);
}

extern "C" int kevin_forward(const kevin_args* args) {
  if (args->num_inputs < 1 || args->num_outputs < 1) return 1;
  const kevin_tensor& x = args->inputs[0];
  const kevin_tensor& y = args->outputs[0];
  if (x.dtype != KEVIN_F32 || y.dtype != KEVIN_F32 || !is_contiguous(x)) return 2;
  int64_t n = 1;
  for (int i = 0; i < x.ndim; ++i) n *= x.shape[i];
  int64_t ny = 1;
  for (int i = 0; i < y.ndim; ++i) ny *= y.shape[i];
  if (ny != n) return 3;
  const float* in = static_cast<const float*>(x.data);
  float* out = static_cast<float*>(y.data);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) _mm_storeu_ps(out + i, gelu4(_mm_loadu_ps(in + i)));
  for (; i < n; ++i) out[i] = gelu1(in[i]);
  return 0;
}
