// CUDA solution for level1/051_sum_dim1: out[b, n] = sum_d x[b, d, n] for x of shape (B, D, N).
// A block of 32 x 16 threads owns 32 adjacent columns of one batch: lanes read coalesced
// 128-byte row segments, the 16 thread rows split D, and shared memory combines them.
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

constexpr int kCols = 32;
constexpr int kRows = 16;

__global__ void __launch_bounds__(kCols* kRows)
    sum_dim1(const float* __restrict__ x, float* __restrict__ y, int64_t nb, int64_t nd,
             int64_t nn) {
  __shared__ float part[kRows][kCols + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kCols + tx;
  for (int64_t b = blockIdx.y; b < nb; b += gridDim.y) {
    float acc0 = 0.f, acc1 = 0.f, acc2 = 0.f, acc3 = 0.f;
    if (col < nn) {
      const float* base = x + b * nd * nn + col;
      int64_t d = ty;
      for (; d + 3 * kRows < nd; d += 4 * kRows) {
        acc0 += base[(d + 0 * kRows) * nn];
        acc1 += base[(d + 1 * kRows) * nn];
        acc2 += base[(d + 2 * kRows) * nn];
        acc3 += base[(d + 3 * kRows) * nn];
      }
      for (; d < nd; d += kRows) acc0 += base[d * nn];
    }
    part[ty][tx] = (acc0 + acc1) + (acc2 + acc3);
    __syncthreads();
    if (ty == 0 && col < nn) {
      float s = 0.f;
      for (int r = 0; r < kRows; ++r) s += part[r][tx];
      y[b * nn + col] = s;
    }
    __syncthreads();
  }
}

extern "C" int kevin_forward(const kevin_args* args) {
  if (args->num_inputs < 1 || args->num_outputs < 1) return 1;
  const kevin_tensor& x = args->inputs[0];
  const kevin_tensor& y = args->outputs[0];
  if (x.dtype != KEVIN_F32 || y.dtype != KEVIN_F32 || x.ndim != 3 || !is_contiguous(x)) return 2;
  const int64_t nb = x.shape[0], nd = x.shape[1], nn = x.shape[2];
  if (nb == 0 || nn == 0) return 0;
  const int64_t gx = (nn + kCols - 1) / kCols;
  const int64_t gy = nb < 65535 ? nb : 65535;
  if (gx > 2147483647) return 3;
  dim3 grid(static_cast<unsigned>(gx), static_cast<unsigned>(gy));
  dim3 block(kCols, kRows);
  sum_dim1<<<grid, block, 0, static_cast<cudaStream_t>(args->stream)>>>(
      static_cast<const float*>(x.data), static_cast<float*>(y.data), nb, nd, nn);
  return cudaGetLastError() == cudaSuccess ? 0 : 4;
}
