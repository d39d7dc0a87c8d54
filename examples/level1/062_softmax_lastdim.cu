// CUDA solution for level1/062_softmax_lastdim: softmax over the last dimension.
// One block per row: each thread keeps an online (max, sum of exp) pair over its strided
// elements, the pairs are merged with warp shuffles and shared memory, then a second pass
// writes exp(x - max) / sum (the row is re-read, mostly from L2).
#include "kevin_abi.h"

#include <cuda_runtime.h>

#include <cfloat>
#include <cstdint>

static inline bool is_contiguous(const kevin_tensor& t) {
  int64_t expect = 1;
  for (int i = t.ndim - 1; i >= 0; --i) {
    if (t.shape[i] != 1 && t.strides[i] != expect) return false;
    expect *= t.shape[i];
  }
  return true;
}

constexpr int kThreads = 512;

// Merge (m, s) with (om, os): both represent sum(exp(v - m)) over disjoint sets.
__device__ __forceinline__ void merge(float& m, float& s, float om, float os) {
  if (om == -FLT_MAX) return;
  if (m == -FLT_MAX) {
    m = om;
    s = os;
    return;
  }
  const float nm = fmaxf(m, om);
  s = s * expf(m - nm) + os * expf(om - nm);
  m = nm;
}

__global__ void __launch_bounds__(kThreads)
    softmax_rows(const float* __restrict__ x, float* __restrict__ y, int64_t rows, int64_t d) {
  __shared__ float sm_m[kThreads / 32];
  __shared__ float sm_s[kThreads / 32];
  __shared__ float row_m, row_inv;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* xr = x + r * d;
    float* yr = y + r * d;
    float m = -FLT_MAX, s = 0.0f;
    for (int64_t j = threadIdx.x; j < d; j += kThreads) {
      const float v = xr[j];
      if (v > m) {
        s = (m == -FLT_MAX ? 0.0f : s * expf(m - v)) + 1.0f;
        m = v;
      } else {
        s += expf(v - m);
      }
    }
    for (int off = 16; off > 0; off >>= 1) {
      const float om = __shfl_xor_sync(0xffffffffu, m, off);
      const float os = __shfl_xor_sync(0xffffffffu, s, off);
      merge(m, s, om, os);
    }
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) {
      sm_m[warp] = m;
      sm_s[warp] = s;
    }
    __syncthreads();
    if (warp == 0) {
      m = lane < kThreads / 32 ? sm_m[lane] : -FLT_MAX;
      s = lane < kThreads / 32 ? sm_s[lane] : 0.0f;
      for (int off = 16; off > 0; off >>= 1) {
        const float om = __shfl_xor_sync(0xffffffffu, m, off);
        const float os = __shfl_xor_sync(0xffffffffu, s, off);
        merge(m, s, om, os);
      }
      if (lane == 0) {
        row_m = m;
        row_inv = 1.0f / s;
      }
    }
    __syncthreads();
    const float rm = row_m, inv = row_inv;
    for (int64_t j = threadIdx.x; j < d; j += kThreads) yr[j] = expf(xr[j] - rm) * inv;
    __syncthreads();  // row_m / row_inv / sm_* are reused by the next row
  }
}

extern "C" int kevin_forward(const kevin_args* args) {
  if (args->num_inputs < 1 || args->num_outputs < 1) return 1;
  const kevin_tensor& x = args->inputs[0];
  const kevin_tensor& y = args->outputs[0];
  if (x.dtype != KEVIN_F32 || y.dtype != KEVIN_F32 || x.ndim < 1 || !is_contiguous(x)) return 2;
  const int64_t d = x.shape[x.ndim - 1];
  int64_t rows = 1;
  for (int i = 0; i + 1 < x.ndim; ++i) rows *= x.shape[i];
  if (rows == 0 || d == 0) return 0;
  const int64_t blocks = rows < 65535 ? rows : 65535;
  softmax_rows<<<static_cast<unsigned>(blocks), kThreads, 0,
                 static_cast<cudaStream_t>(args->stream)>>>(static_cast<const float*>(x.data),
                                                            static_cast<float*>(y.data), rows, d);
  return cudaGetLastError() == cudaSuccess ? 0 : 4;
}
