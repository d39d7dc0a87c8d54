// CUDA solution for level1/001_square_matmul: C = A @ B in fp32 (row-major, any M, K, N).
// Classic shared-memory tiling: 128x128 block tile, k-step 8, 256 threads each owning an 8x8
// register tile (two 4-wide row groups x two 4-wide column groups, conflict-free float4 LDS).
#include "kevin_abi.h"

#include <cuda_runtime.h>

#include <cstdint>

static inline bool is_contiguous(const kevin_tensor& t) {
  int64_t expect = 1;
  for (int i = t.ndim - 1; i >= 0; --i) {
    if (t.shape[i] != 1 && t.strides[i] != expect) return false;
    expect *= t.shape[i];
  }
  return true;
}

constexpr int BM = 128, BN = 128, BK = 8, PAD = 4, THREADS = 256;

__global__ void __launch_bounds__(THREADS)
    sgemm_128x128(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                  int M, int N, int K, bool vec_a, bool vec_b, bool vec_c) {
  __shared__ __align__(16) float As[BK][BM + PAD];  // As[k][m]: A tile stored transposed
  __shared__ __align__(16) float Bs[BK][BN + PAD];  // Bs[k][n]
  const int tid = threadIdx.x;
  const int tr = tid / 16, tc = tid % 16;
  const int64_t bm = static_cast<int64_t>(blockIdx.y) * BM;
  const int64_t bn = static_cast<int64_t>(blockIdx.x) * BN;
  // global -> shared assignment: A: row tid/2, k-quad (tid%2)*4; B: k-row tid/32, n-quad (tid%32)*4
  const int a_r = tid / 2, a_k = (tid % 2) * 4;
  const int b_k = tid / 32, b_c = (tid % 32) * 4;

  float acc[8][8];
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;

  for (int k0 = 0; k0 < K; k0 += BK) {
    {
      const int64_t gr = bm + a_r;
      const int gk = k0 + a_k;
      float v[4];
      if (vec_a && gr < M && gk + 3 < K) {
        const float4 t = *reinterpret_cast<const float4*>(A + gr * K + gk);
        v[0] = t.x;
        v[1] = t.y;
        v[2] = t.z;
        v[3] = t.w;
      } else {
#pragma unroll
        for (int i = 0; i < 4; ++i) v[i] = (gr < M && gk + i < K) ? A[gr * K + gk + i] : 0.0f;
      }
#pragma unroll
      for (int i = 0; i < 4; ++i) As[a_k + i][a_r] = v[i];
    }
    {
      const int gk = k0 + b_k;
      const int64_t gc = bn + b_c;
      float4 t;
      if (vec_b && gk < K && gc + 3 < N) {
        t = *reinterpret_cast<const float4*>(B + static_cast<int64_t>(gk) * N + gc);
      } else {
        t.x = (gk < K && gc + 0 < N) ? B[static_cast<int64_t>(gk) * N + gc + 0] : 0.0f;
        t.y = (gk < K && gc + 1 < N) ? B[static_cast<int64_t>(gk) * N + gc + 1] : 0.0f;
        t.z = (gk < K && gc + 2 < N) ? B[static_cast<int64_t>(gk) * N + gc + 2] : 0.0f;
        t.w = (gk < K && gc + 3 < N) ? B[static_cast<int64_t>(gk) * N + gc + 3] : 0.0f;
      }
      *reinterpret_cast<float4*>(&Bs[b_k][b_c]) = t;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      const float4 a0 = *reinterpret_cast<const float4*>(&As[k][tr * 4]);
      const float4 a1 = *reinterpret_cast<const float4*>(&As[k][64 + tr * 4]);
      const float4 b0 = *reinterpret_cast<const float4*>(&Bs[k][tc * 4]);
      const float4 b1 = *reinterpret_cast<const float4*>(&Bs[k][64 + tc * 4]);
      const float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
      const float b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] += a[i] * b[j];
    }
    __syncthreads();
  }

#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int64_t row = bm + (i < 4 ? tr * 4 + i : 64 + tr * 4 + (i - 4));
    if (row >= M) continue;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int64_t col = bn + h * 64 + tc * 4;
      float* dst = C + row * N + col;
      if (vec_c && col + 3 < N) {
        *reinterpret_cast<float4*>(dst) =
            make_float4(acc[i][h * 4 + 0], acc[i][h * 4 + 1], acc[i][h * 4 + 2], acc[i][h * 4 + 3]);
      } else {
#pragma unroll
        for (int j = 0; j < 4; ++j)
          if (col + j < N) dst[j] = acc[i][h * 4 + j];
      }
    }
  }
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
  if (m >= (1LL << 31) || n >= (1LL << 31) || k >= (1LL << 31)) return 3;
  if (m == 0 || n == 0) return 0;
  const float* A = static_cast<const float*>(a.data);
  const float* B = static_cast<const float*>(b.data);
  float* C = static_cast<float*>(c.data);
  const bool vec_a = k % 4 == 0 && reinterpret_cast<uintptr_t>(A) % 16 == 0;
  const bool vec_b = n % 4 == 0 && reinterpret_cast<uintptr_t>(B) % 16 == 0;
  const bool vec_c = n % 4 == 0 && reinterpret_cast<uintptr_t>(C) % 16 == 0;
  const int64_t gx = (n + BN - 1) / BN, gy = (m + BM - 1) / BM;
  if (gy > 65535) return 3;
  dim3 grid(static_cast<unsigned>(gx), static_cast<unsigned>(gy));
  sgemm_128x128<<<grid, THREADS, 0, static_cast<cudaStream_t>(args->stream)>>>(
      A, B, C, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), vec_a, vec_b, vec_c);
  return cudaGetLastError() == cudaSuccess ? 0 : 4;
}
