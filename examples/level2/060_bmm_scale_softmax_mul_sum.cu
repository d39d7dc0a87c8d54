// CUDA example for level2/060_bmm_scale_softmax_mul_sum: out[b, i] = sum_j softmax(2 s_i)_j v_j
// with s = a[b] @ b[b]. A batched tiled SGEMM (64x64 tile, BK = 16, 4x4 per thread) turns each
// tile row into a partial (max, sum of exp, sum of exp * v) in the workspace; a second kernel
// merges a row's partials with the usual max-rescaling (online softmax). Scores are not stored.
#include <cuda_runtime.h>
#include <cmath>
#include <cstdint>
#include "kevin_abi.h"

namespace {
constexpr int BM = 64, BN = 64, BK = 16, TM = 4, TN = 4, THREADS = 256;
constexpr float kScale = 2.0f;  // init arg "scale"

// partial: [B][M][tiles_n][3] = (tile max, sum exp(x - max), sum exp(x - max) * v)
__global__ void __launch_bounds__(THREADS)
    bmm_softmax_partial_kernel(const float* __restrict__ a, int64_t sab, int64_t sam,
                               const float* __restrict__ b, int64_t sbb, int64_t sbk,
                               const float* __restrict__ v, float* __restrict__ partial, int M,
                               int N, int K, int tiles_n) {
  __shared__ float As[BK][BM + 4];
  __shared__ float Bs[BK][BN + 4];
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  const int batch = blockIdx.z;
  a += (int64_t)batch * sab;
  b += (int64_t)batch * sbb;
  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

  for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
    for (int r = 0; r < (BM * BK) / THREADS; ++r) {
      const int idx = threadIdx.x + r * THREADS;
      const int m = idx / BK, k = idx % BK;
      const int gm = row0 + m, gk = k0 + k;
      As[k][m] = (gm < M && gk < K) ? a[(int64_t)gm * sam + gk] : 0.0f;
    }
#pragma unroll
    for (int r = 0; r < (BN * BK) / THREADS; ++r) {
      const int idx = threadIdx.x + r * THREADS;
      const int k = idx / BN, n = idx % BN;
      const int gk = k0 + k, gn = col0 + n;
      Bs[k][n] = (gk < K && gn < N) ? b[(int64_t)gk * sbk + gn] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float av[TM], bv[TN];
#pragma unroll
      for (int i = 0; i < TM; ++i) av[i] = As[k][ty + 16 * i];
#pragma unroll
      for (int j = 0; j < TN; ++j) bv[j] = Bs[k][tx + 16 * j];
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
    }
    __syncthreads();
  }

  // The 16 threads sharing a row (same ty) form one half-warp: reduce with xor-shuffles < 16.
  // Column col0 + 0 is always valid, so the tile max below is finite.
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    float mx = -INFINITY;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int col = col0 + tx + 16 * j;
      if (col < N) mx = fmaxf(mx, acc[i][j] * kScale);
    }
#pragma unroll
    for (int off = 8; off > 0; off >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
    float l = 0.0f, n = 0.0f;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int col = col0 + tx + 16 * j;
      if (col < N) {
        const float e = expf(acc[i][j] * kScale - mx);
        l += e;
        n += e * v[col];
      }
    }
#pragma unroll
    for (int off = 8; off > 0; off >>= 1) {
      l += __shfl_xor_sync(0xffffffffu, l, off);
      n += __shfl_xor_sync(0xffffffffu, n, off);
    }
    const int row = row0 + ty + 16 * i;
    if (tx == 0 && row < M) {
      float* p = partial + (((int64_t)batch * M + row) * tiles_n + blockIdx.x) * 3;
      p[0] = mx;
      p[1] = l;
      p[2] = n;
    }
  }
}

__global__ void merge_partials_kernel(const float* __restrict__ partial, float* __restrict__ out,
                                      int64_t rows, int tiles_n) {
  const int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const float* p = partial + r * tiles_n * 3;
  float mx = -INFINITY;
  for (int t = 0; t < tiles_n; ++t) mx = fmaxf(mx, p[3 * t]);
  float l = 0.0f, n = 0.0f;
  for (int t = 0; t < tiles_n; ++t) {
    const float f = expf(p[3 * t] - mx);
    l += p[3 * t + 1] * f;
    n += p[3 * t + 2] * f;
  }
  out[r] = n / l;
}
}  // namespace

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
  if (M > INT32_MAX || N > INT32_MAX || K > INT32_MAX || B > 65535 || N == 0) return 5;
  if (B == 0 || M == 0) return 0;
  const int tiles_n = (int)((N + BN - 1) / BN);
  if ((size_t)(B * M) * tiles_n * 3 * sizeof(float) > args->workspace_bytes) return 6;

  cudaStream_t stream = static_cast<cudaStream_t>(args->stream);
  float* partial = static_cast<float*>(args->workspace);
  dim3 grid((unsigned)tiles_n, (unsigned)((M + BM - 1) / BM), (unsigned)B);
  bmm_softmax_partial_kernel<<<grid, THREADS, 0, stream>>>(
      static_cast<const float*>(ta.data), ta.strides[0], ta.strides[1],
      static_cast<const float*>(tb.data), tb.strides[0], tb.strides[1],
      static_cast<const float*>(tv.data), partial, (int)M, (int)N, (int)K, tiles_n);
  const int64_t rows = B * M;
  merge_partials_kernel<<<(unsigned)((rows + 255) / 256), 256, 0, stream>>>(
      partial, static_cast<float*>(to.data), rows, tiles_n);
  return cudaGetLastError() == cudaSuccess ? 0 : 7;
}
