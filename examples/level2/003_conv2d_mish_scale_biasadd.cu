// CUDA example for level2/003_conv2d_mish_scale_biasadd: 5x5 convolution, padding 2, stride 1,
// then out = mish(conv + conv_bias) * 1.5 + bias[c]. Direct convolution: a block computes a
// 16x16 pixel tile for 8 output channels, staging 8 input channels (with halo) and their
// weights in shared memory per step; the epilogue is fused before the single store.
#include <cuda_runtime.h>
#include <cstdint>
#include "kevin_abi.h"

namespace {
constexpr int KS = 5;  // init arg kernel_size
constexpr int PAD = KS / 2;
constexpr float kScale = 1.5f;  // init arg scale
constexpr int TILE = 16;        // output tile edge (blockDim = TILE x TILE)
constexpr int IT = TILE + KS - 1;
constexpr int COB = 8;  // output channels per block
constexpr int CIB = 8;  // input channels staged per step
constexpr int THREADS = TILE * TILE;

__device__ __forceinline__ float mish(float v) { return v * tanhf(log1pf(expf(v))); }

// x: [N][Ci][H][W] contiguous, w: [Co][Ci][KS][KS], out: [N][Co][H][W].
__global__ void __launch_bounds__(THREADS)
    conv5x5_mish_kernel(const float* __restrict__ x, const float* __restrict__ w,
                        const float* __restrict__ conv_bias, const float* __restrict__ bias2,
                        float* __restrict__ out, int Ci, int Co, int H, int W, int tiles_w) {
  __shared__ float xs[CIB][IT][IT];
  __shared__ float ws[COB][CIB][KS * KS];
  const int tx = threadIdx.x % TILE, ty = threadIdx.x / TILE;
  const int oh0 = (blockIdx.x / tiles_w) * TILE, ow0 = (blockIdx.x % tiles_w) * TILE;
  const int co0 = blockIdx.y * COB;
  const int n = blockIdx.z;
  const int64_t plane = (int64_t)H * W;
  const float* xn = x + (int64_t)n * Ci * plane;

  float acc[COB];
#pragma unroll
  for (int c = 0; c < COB; ++c) acc[c] = 0.0f;

  for (int ci0 = 0; ci0 < Ci; ci0 += CIB) {
    for (int idx = threadIdx.x; idx < CIB * IT * IT; idx += THREADS) {
      const int c = idx / (IT * IT), rem = idx % (IT * IT);
      const int ih = oh0 - PAD + rem / IT, iw = ow0 - PAD + rem % IT;
      const int ci = ci0 + c;
      const bool inside = ci < Ci && ih >= 0 && ih < H && iw >= 0 && iw < W;
      xs[c][rem / IT][rem % IT] = inside ? xn[ci * plane + (int64_t)ih * W + iw] : 0.0f;
    }
    for (int idx = threadIdx.x; idx < COB * CIB * KS * KS; idx += THREADS) {
      const int c = idx / (CIB * KS * KS), rem = idx % (CIB * KS * KS);
      const int cin = rem / (KS * KS), k = rem % (KS * KS);
      const int co = co0 + c, ci = ci0 + cin;
      ws[c][cin][k] = (co < Co && ci < Ci) ? w[((int64_t)co * Ci + ci) * KS * KS + k] : 0.0f;
    }
    __syncthreads();
    for (int cin = 0; cin < CIB; ++cin) {
#pragma unroll
      for (int kh = 0; kh < KS; ++kh) {
#pragma unroll
        for (int kw = 0; kw < KS; ++kw) {
          const float xv = xs[cin][ty + kh][tx + kw];
#pragma unroll
          for (int c = 0; c < COB; ++c) acc[c] = fmaf(xv, ws[c][cin][kh * KS + kw], acc[c]);
        }
      }
    }
    __syncthreads();
  }

  const int oh = oh0 + ty, ow = ow0 + tx;
  if (oh >= H || ow >= W) return;
#pragma unroll
  for (int c = 0; c < COB; ++c) {
    const int co = co0 + c;
    if (co >= Co) break;
    const float v = acc[c] + conv_bias[co];
    out[((int64_t)n * Co + co) * plane + (int64_t)oh * W + ow] = mish(v) * kScale + bias2[co];
  }
}
}  // namespace

// Inputs (state_dict order after x): bias (C,1,1), conv.weight (C,Cin,5,5), conv.bias (C).
extern "C" int kevin_forward(const kevin_args* args) {
  if (args->num_inputs != 4 || args->num_outputs != 1) return 1;
  const kevin_tensor& tx = args->inputs[0];
  const kevin_tensor& tb2 = args->inputs[1];
  const kevin_tensor& tw = args->inputs[2];
  const kevin_tensor& tb = args->inputs[3];
  const kevin_tensor& to = args->outputs[0];
  if (tx.ndim != 4 || tw.ndim != 4 || tb.ndim != 1 || tb2.ndim != 3 || to.ndim != 4) return 2;
  const int64_t N = tx.shape[0], Ci = tx.shape[1], H = tx.shape[2], W = tx.shape[3];
  const int64_t Co = tw.shape[0];
  if (tw.shape[1] != Ci || tw.shape[2] != KS || tw.shape[3] != KS) return 3;
  if (tb.shape[0] != Co || tb2.shape[0] != Co) return 3;
  if (to.shape[0] != N || to.shape[1] != Co || to.shape[2] != H || to.shape[3] != W) return 3;
  if (tx.strides[3] != 1 || tx.strides[2] != W || tx.strides[1] != H * W ||
      tx.strides[0] != Ci * H * W)
    return 4;
  if (N > 65535 || Co > 65535 * (int64_t)COB || H > INT32_MAX / 2 || W > INT32_MAX / 2) return 5;
  if (N == 0 || Co == 0 || H == 0 || W == 0) return 0;

  const int tiles_w = (int)((W + TILE - 1) / TILE);
  const int64_t tiles = (int64_t)tiles_w * ((H + TILE - 1) / TILE);
  if (tiles > INT32_MAX) return 5;
  cudaStream_t stream = static_cast<cudaStream_t>(args->stream);
  dim3 grid((unsigned)tiles, (unsigned)((Co + COB - 1) / COB), (unsigned)N);
  conv5x5_mish_kernel<<<grid, THREADS, 0, stream>>>(
      static_cast<const float*>(tx.data), static_cast<const float*>(tw.data),
      static_cast<const float*>(tb.data), static_cast<const float*>(tb2.data),
      static_cast<float*>(to.data), (int)Ci, (int)Co, (int)H, (int)W, tiles_w);
  return cudaGetLastError() == cudaSuccess ? 0 : 6;
}
