// CUDA solution for level1/080_maxpool2d: MaxPool2d, window 3, stride 2, padding 1.
// One thread per output element (grid-stride); consecutive threads produce consecutive
// output columns. Output sizes come from the output tensor; padding never wins.
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

__global__ void maxpool3s2p1(const float* __restrict__ x, float* __restrict__ y, int64_t total,
                             int h, int w, int oh_n, int ow_n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += stride) {
    const int ow = static_cast<int>(i % ow_n);
    const int oh = static_cast<int>((i / ow_n) % oh_n);
    const int64_t p = i / (static_cast<int64_t>(ow_n) * oh_n);
    const float* in = x + p * h * w;
    const int h0 = max(oh * 2 - 1, 0), h1 = min(oh * 2 + 2, h);
    const int w0 = max(ow * 2 - 1, 0), w1 = min(ow * 2 + 2, w);
    float m = -FLT_MAX;
    for (int ih = h0; ih < h1; ++ih)
      for (int iw = w0; iw < w1; ++iw) m = fmaxf(m, in[static_cast<int64_t>(ih) * w + iw]);
    y[i] = m;
  }
}

extern "C" int kevin_forward(const kevin_args* args) {
  if (args->num_inputs < 1 || args->num_outputs < 1) return 1;
  const kevin_tensor& x = args->inputs[0];
  const kevin_tensor& y = args->outputs[0];
  if (x.dtype != KEVIN_F32 || y.dtype != KEVIN_F32 || x.ndim != 4 || y.ndim != 4) return 2;
  if (!is_contiguous(x)) return 2;
  const int64_t planes = x.shape[0] * x.shape[1], h = x.shape[2], w = x.shape[3];
  const int64_t oh_n = y.shape[2], ow_n = y.shape[3];
  if (y.shape[0] * y.shape[1] != planes) return 3;
  if (h > (1 << 30) || w > (1 << 30) || oh_n > (1 << 30) || ow_n > (1 << 30)) return 3;
  const int64_t total = planes * oh_n * ow_n;
  if (total == 0) return 0;
  const int threads = 256;
  int64_t blocks = (total + threads - 1) / threads;
  if (blocks > 65535 * 4) blocks = 65535 * 4;
  maxpool3s2p1<<<static_cast<unsigned>(blocks), threads, 0,
                 static_cast<cudaStream_t>(args->stream)>>>(
      static_cast<const float*>(x.data), static_cast<float*>(y.data), total, static_cast<int>(h),
      static_cast<int>(w), static_cast<int>(oh_n), static_cast<int>(ow_n));
  return cudaGetLastError() == cudaSuccess ? 0 : 4;
}
