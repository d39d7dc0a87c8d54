// CUDA example for level2/037_gemm_layernorm_gelu_scale: y = x @ W^T + b written to the output
// by a shared-memory tiled SGEMM (64x64 tile, BK = 16, 4x4 per thread); then one block per row
// does LayerNorm (eps 1e-5, gamma/beta), exact GELU and the 0.5 scale in place.
#include <cuda_runtime.h>
#include <cstdint>
#include "kevin_abi.h"

namespace {
constexpr int BM = 64, BN = 64, BK = 16, TM = 4, TN = 4, THREADS = 256;
constexpr int ROW_THREADS = 256;
constexpr float kEps = 1e-5f;   // nn.LayerNorm default
constexpr float kScale = 0.5f;  // init arg "scale"

__global__ void __launch_bounds__(THREADS)
    linear_bias_kernel(const float* __restrict__ x, int64_t ldx, const float* __restrict__ W,
                       int64_t ldw, const float* __restrict__ bias, float* __restrict__ out, int M,
                       int N, int K) {
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
      As[k][m] = (gm < M && gk < K) ? x[(int64_t)gm * ldx + gk] : 0.0f;
    }
#pragma unroll
    for (int r = 0; r < (BN * BK) / THREADS; ++r) {
      const int idx = threadIdx.x + r * THREADS;
      const int n = idx / BK, k = idx % BK;
      const int gn = col0 + n, gk = k0 + k;
      Bs[k][n] = (gn < N && gk < K) ? W[(int64_t)gn * ldw + gk] : 0.0f;
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
      if (col < N) out[(int64_t)row * N + col] = acc[i][j] + bias[col];
    }
  }
}

// Sum over the block; every thread gets the result. red must hold ROW_THREADS / 32 floats.
__device__ float block_sum(float v, float* red) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();  // red may still be read by a previous call
  if (lane == 0) red[warp] = v;
  __syncthreads();
  float total = 0.0f;
#pragma unroll
  for (int w = 0; w < ROW_THREADS / 32; ++w) total += red[w];
  return total;
}

__global__ void __launch_bounds__(ROW_THREADS)
    layernorm_gelu_kernel(float* __restrict__ y, const float* __restrict__ gamma,
                          const float* __restrict__ beta, int N) {
  __shared__ float red[ROW_THREADS / 32];
  float* row = y + (int64_t)blockIdx.x * N;
  float s = 0.0f;
  for (int j = threadIdx.x; j < N; j += ROW_THREADS) s += row[j];
  const float mean = block_sum(s, red) / N;
  float q = 0.0f;
  for (int j = threadIdx.x; j < N; j += ROW_THREADS) {
    const float d = row[j] - mean;
    q += d * d;
  }
  const float rstd = rsqrtf(block_sum(q, red) / N + kEps);
  for (int j = threadIdx.x; j < N; j += ROW_THREADS) {
    const float v = (row[j] - mean) * rstd * gamma[j] + beta[j];
    row[j] = kScale * 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
  }
}
}  // namespace

// Inputs: x, linear.weight (OUT, IN), linear.bias, norm.weight, norm.bias. Output (B, OUT).
extern "C" int kevin_forward(const kevin_args* args) {
  if (args->num_inputs != 5 || args->num_outputs != 1) return 1;
  const kevin_tensor& tx = args->inputs[0];
  const kevin_tensor& tW = args->inputs[1];
  const kevin_tensor& tb = args->inputs[2];
  const kevin_tensor& tg = args->inputs[3];
  const kevin_tensor& tbeta = args->inputs[4];
  const kevin_tensor& to = args->outputs[0];
  if (tx.ndim != 2 || tW.ndim != 2 || tb.ndim != 1 || tg.ndim != 1 || tbeta.ndim != 1) return 2;
  const int64_t M = tx.shape[0], K = tx.shape[1], N = tW.shape[0];
  if (tW.shape[1] != K || tb.shape[0] != N || tg.shape[0] != N || tbeta.shape[0] != N) return 3;
  if (to.ndim != 2 || to.shape[0] != M || to.shape[1] != N) return 3;
  if (tx.strides[1] != 1 || tW.strides[1] != 1) return 4;
  if (M > INT32_MAX || N > INT32_MAX || K > INT32_MAX) return 5;
  if (M == 0 || N == 0) return 0;

  cudaStream_t stream = static_cast<cudaStream_t>(args->stream);
  float* out = static_cast<float*>(to.data);
  dim3 grid((unsigned)((N + BN - 1) / BN), (unsigned)((M + BM - 1) / BM));
  linear_bias_kernel<<<grid, THREADS, 0, stream>>>(
      static_cast<const float*>(tx.data), tx.strides[0], static_cast<const float*>(tW.data),
      tW.strides[0], static_cast<const float*>(tb.data), out, (int)M, (int)N, (int)K);
  layernorm_gelu_kernel<<<(unsigned)M, ROW_THREADS, 0, stream>>>(
      out, static_cast<const float*>(tg.data), static_cast<const float*>(tbeta.data), (int)N);
  return cudaGetLastError() == cudaSuccess ? 0 : 6;
}
