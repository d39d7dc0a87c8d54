// CPU example for level2/051_matmul_scale_tanh_biasadd: out = tanh(0.02 * (a @ b)) + bias.
// Row-at-a-time GEMM in "axpy" order (a[i][k] * row k of b) so the inner loop is a plain
// contiguous update that g++ -O3 vectorises; the epilogue runs on the row while it is in cache.
#include <cmath>
#include <cstdint>
#include "kevin_abi.h"

namespace {
constexpr float kScale = 0.02f;  // init arg "scale"
}

extern "C" int kevin_forward(const kevin_args* args) {
  if (args->num_inputs != 3 || args->num_outputs != 1) return 1;
  const kevin_tensor& ta = args->inputs[0];
  const kevin_tensor& tb = args->inputs[1];
  const kevin_tensor& tbias = args->inputs[2];
  const kevin_tensor& to = args->outputs[0];
  if (ta.ndim != 2 || tb.ndim != 2 || tbias.ndim != 1 || to.ndim != 2) return 2;
  if (ta.dtype != KEVIN_F32 || tb.dtype != KEVIN_F32 || tbias.dtype != KEVIN_F32) return 3;
  const int64_t M = ta.shape[0], K = ta.shape[1], N = tb.shape[1];
  if (tb.shape[0] != K || tbias.shape[0] != N || to.shape[0] != M || to.shape[1] != N) return 4;
  if (ta.strides[1] != 1 || tb.strides[1] != 1 || tbias.strides[0] != 1) return 5;
  const int64_t lda = ta.strides[0], ldb = tb.strides[0];

  const float* a = static_cast<const float*>(ta.data);
  const float* b = static_cast<const float*>(tb.data);
  const float* bias = static_cast<const float*>(tbias.data);
  float* out = static_cast<float*>(to.data);

  for (int64_t i = 0; i < M; ++i) {
    float* c = out + i * N;
    for (int64_t j = 0; j < N; ++j) c[j] = 0.0f;
    const float* arow = a + i * lda;
    for (int64_t k = 0; k < K; ++k) {
      const float aik = arow[k];
      const float* brow = b + k * ldb;
      for (int64_t j = 0; j < N; ++j) c[j] += aik * brow[j];
    }
    for (int64_t j = 0; j < N; ++j) c[j] = std::tanh(c[j] * kScale) + bias[j];
  }
  return 0;
}
