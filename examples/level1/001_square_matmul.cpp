// CPU solution for level1/001_square_matmul: C = A @ B (row-major, sizes read from shapes).
// Blocked over rows of A and the inner dimension; a 4-row micro-kernel reuses each loaded
// row of B four times, and the contiguous inner loop over columns vectorises.
#include "kevin_abi.h"

#include <algorithm>
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
  if (args->num_inputs < 2 || args->num_outputs < 1) return 1;
  const kevin_tensor& a = args->inputs[0];
  const kevin_tensor& b = args->inputs[1];
  const kevin_tensor& c = args->outputs[0];
  if (a.dtype != KEVIN_F32 || b.dtype != KEVIN_F32 || c.dtype != KEVIN_F32) return 2;
  if (a.ndim != 2 || b.ndim != 2 || c.ndim != 2 || !is_contiguous(a) || !is_contiguous(b)) return 2;
  const int64_t m = a.shape[0], k = a.shape[1], n = b.shape[1];
  if (b.shape[0] != k || c.shape[0] != m || c.shape[1] != n) return 3;
  const float* A = static_cast<const float*>(a.data);
  const float* B = static_cast<const float*>(b.data);
  float* C = static_cast<float*>(c.data);

  for (int64_t i = 0; i < m * n; ++i) C[i] = 0.0f;
  const int64_t KB = 128, NB = 512;
  for (int64_t j0 = 0; j0 < n; j0 += NB) {
    const int64_t j1 = std::min(n, j0 + NB);
    for (int64_t k0 = 0; k0 < k; k0 += KB) {
      const int64_t k1 = std::min(k, k0 + KB);
      int64_t i = 0;
      for (; i + 4 <= m; i += 4) {
        float* __restrict__ c0 = C + (i + 0) * n;
        float* __restrict__ c1 = C + (i + 1) * n;
        float* __restrict__ c2 = C + (i + 2) * n;
        float* __restrict__ c3 = C + (i + 3) * n;
        for (int64_t kk = k0; kk < k1; ++kk) {
          const float a0 = A[(i + 0) * k + kk], a1 = A[(i + 1) * k + kk];
          const float a2 = A[(i + 2) * k + kk], a3 = A[(i + 3) * k + kk];
          const float* __restrict__ br = B + kk * n;
          for (int64_t j = j0; j < j1; ++j) {
            const float bv = br[j];
            c0[j] += a0 * bv;
            c1[j] += a1 * bv;
            c2[j] += a2 * bv;
            c3[j] += a3 * bv;
          }
        }
      }
      for (; i < m; ++i) {
        float* __restrict__ ci = C + i * n;
        for (int64_t kk = k0; kk < k1; ++kk) {
          const float av = A[i * k + kk];
          const float* __restrict__ br = B + kk * n;
          for (int64_t j = j0; j < j1; ++j) ci[j] += av * br[j];
        }
      }
    }
  }
  return 0;
}
