// CUDA example for level2/051_matmul_scale_tanh_biasadd: out = tanh(0.02 * (a @ b)) + bias.
// Classic shared-memory tiled SGEMM (64x64 block tile, BK = 16, 4x4 outputs per thread) with
// the scale/tanh/bias epilogue applied in registers before the single store.
#include <cuda_runtime.h>
#include <cstdint>
#include "kevin_abi.h"

namespace {
constexpr int BM = 64, BN = 64, BK = 16, TM = 4, TN = 4, THREADS = 256;
constexpr float kScale = 0.02f;  // init arg "scale"

// a: M x K (row stride lda), b: K x N (row stride ldb), out: M x N contiguous.
__global__ void __launch_bounds__(THREADS)
    matmul_tanh_bias_kernel(const float* __restrict__ a, int64_t lda, const float* __restrict__ b,
                            int64_t ldb, const float* __restrict__ bias, float* __restrict__ out,
                            int M, int N, int K) {
  __shared__ float As[BK][BM + 4];
  __shared__ float Bs[BK][BN + 4];
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
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
      As[k][m] = (gm < M && gk < K) ? a[(int64_t)gm * lda + gk] : 0.0f;
    }
#pragma unroll
    for (int r = 0; r < (BN * BK) / THREADS; ++r) {
      const int idx = threadIdx.x + r * THREADS;
      const int k = idx / BN, n = idx % BN;
      const int gk = k0 + k, gn = col0 + n;
      Bs[k][n] = (gk < K && gn < N) ? b[(int64_t)gk * ldb + gn] : 0.0f;
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

#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int row = row0 + ty + 16 * i;
    if (row >= M) continue;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int col = col0 + tx + 16 * j;
      if (col < N) out[(int64_t)row * N + col] = tanhf(acc[i][j] * kScale) + bias[col];
    }
  }
}
}  // namespace

// Inputs: a (M, K), b (K, N), bias (N). Output (M, N).
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
  if (M > INT32_MAX || N > INT32_MAX || K > INT32_MAX) return 6;
  if (M == 0 || N == 0) return 0;

  cudaStream_t stream = static_cast<cudaStream_t>(args->stream);
  dim3 grid((unsigned)((N + BN - 1) / BN), (unsigned)((M + BM - 1) / BM));
  matmul_tanh_bias_kernel<<<grid, THREADS, 0, stream>>>(
      static_cast<const float*>(ta.data), ta.strides[0], static_cast<const float*>(tb.data),
      tb.strides[0], static_cast<const float*>(tbias.data), static_cast<float*>(to.data), (int)M,
      (int)N, (int)K);
  return cudaGetLastError() == cudaSuccess ? 0 : 7;
}
