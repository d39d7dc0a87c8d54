// CUDA example for level2/045_gemm_sigmoid_mul_residualadd: y = x @ W^T + b;
// out = sigmoid(y) * w + y. Shared-memory tiled SGEMM (64x64 tile, BK = 16, 4x4 per thread)
// reading both operands K-contiguous, with the whole epilogue fused before the store.
#include <cuda_runtime.h>
#include <cstdint>
#include "kevin_abi.h"

namespace {
constexpr int BM = 64, BN = 64, BK = 16, TM = 4, TN = 4, THREADS = 256;

// x: B x K (row stride ldx); W: N x K (row stride ldw); out: B x N contiguous.
__global__ void __launch_bounds__(THREADS)
    linear_sigmoid_gate_kernel(const float* __restrict__ x, int64_t ldx,
                               const float* __restrict__ W, int64_t ldw,
                               const float* __restrict__ bias, const float* __restrict__ gate_w,
                               float* __restrict__ out, int M, int N, int K) {
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
      if (col >= N) continue;
      const float y = acc[i][j] + bias[col];
      out[(int64_t)row * N + col] = gate_w[col] / (1.0f + expf(-y)) + y;
    }
  }
}
}  // namespace

// Inputs (state_dict order after x): weight (OUT), linear.weight (OUT, IN), linear.bias (OUT).
extern "C" int kevin_forward(const kevin_args* args) {
  if (args->num_inputs != 4 || args->num_outputs != 1) return 1;
  const kevin_tensor& tx = args->inputs[0];
  const kevin_tensor& tw = args->inputs[1];
  const kevin_tensor& tW = args->inputs[2];
  const kevin_tensor& tb = args->inputs[3];
  const kevin_tensor& to = args->outputs[0];
  if (tx.ndim != 2 || tw.ndim != 1 || tW.ndim != 2 || tb.ndim != 1 || to.ndim != 2) return 2;
  const int64_t M = tx.shape[0], K = tx.shape[1], N = tW.shape[0];
  if (tW.shape[1] != K || tw.shape[0] != N || tb.shape[0] != N) return 3;
  if (to.shape[0] != M || to.shape[1] != N) return 3;
  if (tx.strides[1] != 1 || tW.strides[1] != 1 || tw.strides[0] != 1 || tb.strides[0] != 1)
    return 4;
  if (M > INT32_MAX || N > INT32_MAX || K > INT32_MAX) return 5;
  if (M == 0 || N == 0) return 0;

  cudaStream_t stream = static_cast<cudaStream_t>(args->stream);
  dim3 grid((unsigned)((N + BN - 1) / BN), (unsigned)((M + BM - 1) / BM));
  linear_sigmoid_gate_kernel<<<grid, THREADS, 0, stream>>>(
      static_cast<const float*>(tx.data), tx.strides[0], static_cast<const float*>(tW.data),
      tW.strides[0], static_cast<const float*>(tb.data), static_cast<const float*>(tw.data),
      static_cast<float*>(to.data), (int)M, (int)N, (int)K);
  return cudaGetLastError() == cudaSuccess ? 0 : 6;
}
