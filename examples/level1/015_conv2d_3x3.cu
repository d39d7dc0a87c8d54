// CUDA solution for level1/015_conv2d_3x3: Conv2d, 3x3 kernel, stride 1, padding 1, bias.
// Inputs: x (N, CIN, H, W), weight (COUT, CIN, 3, 3), bias (COUT). A 16x8-thread block makes a
// 16x16 output tile for 8 output channels (2 pixels x 8 channels per thread), staging 8 input
// channels at a time (18x18 halo tile, zero padded) and their weights in shared memory.
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

constexpr int TW = 16, TH = 16;  // output tile
constexpr int BX = 16, BY = 8;   // threads; each thread: 2 rows
constexpr int COB = 8, CIC = 8;  // output channels per block, input channels per stage
constexpr int IW = TW + 2, IH = TH + 2, IS = 24;  // halo tile, padded row stride

__global__ void __launch_bounds__(BX* BY)
    conv3x3(const float* __restrict__ x, const float* __restrict__ w,
            const float* __restrict__ bias, float* __restrict__ y, int nb, int cin, int cout, int h,
            int wd, int64_t nz) {
  __shared__ float in_s[CIC][IH][IS];
  __shared__ float w_s[COB][CIC][9];
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * BX + tx;
  const int ow0 = blockIdx.x * TW, oh0 = blockIdx.y * TH;
  const int cgroups = (cout + COB - 1) / COB;
  for (int64_t z = blockIdx.z; z < nz; z += gridDim.z) {
    const int n = static_cast<int>(z / cgroups);
    const int co0 = static_cast<int>(z % cgroups) * COB;
    float acc[COB][2];
#pragma unroll
    for (int c = 0; c < COB; ++c) acc[c][0] = acc[c][1] = 0.0f;

    for (int ci0 = 0; ci0 < cin; ci0 += CIC) {
      for (int idx = tid; idx < CIC * IH * IW; idx += BX * BY) {
        const int c = idx / (IH * IW), rem = idx % (IH * IW);
        const int ry = rem / IW, rx = rem % IW;
        const int gy = oh0 - 1 + ry, gx = ow0 - 1 + rx, gc = ci0 + c;
        float v = 0.0f;
        if (gc < cin && gy >= 0 && gy < h && gx >= 0 && gx < wd)
          v = x[((static_cast<int64_t>(n) * cin + gc) * h + gy) * wd + gx];
        in_s[c][ry][rx] = v;
      }
      for (int idx = tid; idx < COB * CIC * 9; idx += BX * BY) {
        const int co = idx / (CIC * 9), rem = idx % (CIC * 9);
        const int c = rem / 9, k = rem % 9;
        const int gco = co0 + co, gc = ci0 + c;
        w_s[co][c][k] =
            (gco < cout && gc < cin) ? w[(static_cast<int64_t>(gco) * cin + gc) * 9 + k] : 0.0f;
      }
      __syncthreads();
#pragma unroll 2
      for (int c = 0; c < CIC; ++c) {
        float v[4][3];
#pragma unroll
        for (int r = 0; r < 4; ++r)
#pragma unroll
          for (int q = 0; q < 3; ++q) v[r][q] = in_s[c][ty * 2 + r][tx + q];
#pragma unroll
        for (int co = 0; co < COB; ++co) {
#pragma unroll
          for (int kh = 0; kh < 3; ++kh)
#pragma unroll
            for (int kw = 0; kw < 3; ++kw) {
              const float wv = w_s[co][c][kh * 3 + kw];
              acc[co][0] += wv * v[kh][kw];
              acc[co][1] += wv * v[kh + 1][kw];
            }
        }
      }
      __syncthreads();
    }

    const int ow = ow0 + tx;
#pragma unroll
    for (int p = 0; p < 2; ++p) {
      const int oh = oh0 + ty * 2 + p;
      if (oh >= h || ow >= wd) continue;
#pragma unroll
      for (int co = 0; co < COB; ++co) {
        const int gco = co0 + co;
        if (gco < cout)
          y[((static_cast<int64_t>(n) * cout + gco) * h + oh) * wd + ow] = acc[co][p] + bias[gco];
      }
    }
  }
}

extern "C" int kevin_forward(const kevin_args* args) {
  if (args->num_inputs < 3 || args->num_outputs < 1) return 1;
  const kevin_tensor& x = args->inputs[0];
  const kevin_tensor& w = args->inputs[1];
  const kevin_tensor& b = args->inputs[2];
  const kevin_tensor& y = args->outputs[0];
  if (x.dtype != KEVIN_F32 || w.dtype != KEVIN_F32 || b.dtype != KEVIN_F32 || y.dtype != KEVIN_F32)
    return 2;
  if (x.ndim != 4 || w.ndim != 4 || b.ndim != 1 || y.ndim != 4) return 2;
  if (!is_contiguous(x) || !is_contiguous(w) || !is_contiguous(b)) return 2;
  const int64_t nb = x.shape[0], cin = x.shape[1], h = x.shape[2], wd = x.shape[3];
  const int64_t cout = w.shape[0];
  if (w.shape[1] != cin || w.shape[2] != 3 || w.shape[3] != 3 || b.shape[0] != cout) return 3;
  if (y.shape[0] != nb || y.shape[1] != cout || y.shape[2] != h || y.shape[3] != wd) return 3;
  if (nb == 0 || cout == 0 || h == 0 || wd == 0) return 0;
  if (nb > (1 << 30) || cin > (1 << 30) || cout > (1 << 30) || h > (1 << 30) || wd > (1 << 30))
    return 3;
  const int64_t gx = (wd + TW - 1) / TW, gy = (h + TH - 1) / TH;
  const int64_t nz = nb * ((cout + COB - 1) / COB);
  if (gy > 65535) return 3;
  dim3 grid(static_cast<unsigned>(gx), static_cast<unsigned>(gy),
            static_cast<unsigned>(nz < 65535 ? nz : 65535));
  dim3 block(BX, BY);
  conv3x3<<<grid, block, 0, static_cast<cudaStream_t>(args->stream)>>>(
      static_cast<const float*>(x.data), static_cast<const float*>(w.data),
      static_cast<const float*>(b.data), static_cast<float*>(y.data), static_cast<int>(nb),
      static_cast<int>(cin), static_cast<int>(cout), static_cast<int>(h), static_cast<int>(wd), nz);
  return cudaGetLastError() == cudaSuccess ? 0 : 4;
}
