// CUDA example for level2/064_bmm_tanh_mul_sum: out[b,i,0] = sum_j tanh((a[b] @ b[b])[i,j]) w[j].
// A batched tiled SGEMM (64x64 tile, BK = 16, 4x4 per thread) reduces each tile row's
// tanh-weighted columns to one partial in the workspace; a second kernel adds a row's partials
// in a fixed order (deterministic; the B x M x N product is never stored).
#include <cuda_runtime.h>
#include <cstdint>
#include "kevin_abi.h"

namespace {
constexpr int BM = 64, BN = 64, BK = 16, TM = 4, TN = 4, THREADS = 256;

// a: [B][M][K], b: [B][K][N] (row-major, given strides); partial: [B][M][tiles_n].
__global__ void __launch_bounds__(THREADS)
    bmm_tanh_dot_kernel(const float* __restrict__ a, int64_t sab, int64_t sam,
                        const float* __restrict__ b, int64_t sbb, int64_t sbk,
                        const float* __restrict__ w, float* __restrict__ partial, int M, int N,
                        int K, int tiles_n) {
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

  // Per row: this thread's 4 columns, then across the 16 threads (tx) that share the row.
  // Those 16 threads are one half of a warp, so xor-shuffles below 16 stay inside it.
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int col = col0 + tx + 16 * j;
      if (col < N) s += tanhf(acc[i][j]) * w[col];
    }
#pragma unroll
    for (int off = 8; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
    const int row = row0 + ty + 16 * i;
    if (tx == 0 && row < M) partial[((int64_t)batch * M + row) * tiles_n + blockIdx.x] = s;
  }
}

__global__ void sum_partials_kernel(const float* __restrict__ partial, float* __restrict__ out,
                                    int64_t rows, int tiles_n) {
  const int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const float* p = partial + r * tiles_n;
  float s = 0.0f;
  for (int t = 0; t < tiles_n; ++t) s += p[t];
  out[r] = s;
}
}  // namespace

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
  if (M > INT32_MAX || N > INT32_MAX || K > INT32_MAX || B > 65535 || N == 0) return 5;
  if (B == 0 || M == 0) return 0;
  const int tiles_n = (int)((N + BN - 1) / BN);
  if ((size_t)(B * M) * tiles_n * sizeof(float) > args->workspace_bytes) return 6;

  cudaStream_t stream = static_cast<cudaStream_t>(args->stream);
  float* partial = static_cast<float*>(args->workspace);
  float* out = static_cast<float*>(to.data);
  dim3 grid((unsigned)tiles_n, (unsigned)((M + BM - 1) / BM), (unsigned)B);
  bmm_tanh_dot_kernel<<<grid, THREADS, 0, stream>>>(
      static_cast<const float*>(ta.data), ta.strides[0], ta.strides[1],
      static_cast<const float*>(tb.data), tb.strides[0], tb.strides[1],
      static_cast<const float*>(tw.data), partial, (int)M, (int)N, (int)K, tiles_n);
  const int64_t rows = B * M;
  sum_partials_kernel<<<(unsigned)((rows + 255) / 256), 256, 0, stream>>>(partial, out, rows,
                                                                          tiles_n);
  return cudaGetLastError() == cudaSuccess ? 0 : 7;
}
