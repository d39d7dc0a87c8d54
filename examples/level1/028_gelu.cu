// CUDA solution for level1/028_gelu: exact GELU, out = 0.5 * x * (1 + erf(x / sqrt(2))).
// Memory bound: grid-stride loop with 16-byte float4 loads/stores when both pointers are
// 16-byte aligned, plus a scalar kernel for the remaining tail. Full-precision erff.
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

__device__ __forceinline__ float gelu(float x) {
  return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
}

__global__ void gelu_vec4(const float4* __restrict__ in, float4* __restrict__ out, int64_t n4) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n4;
       i += stride) {
    float4 v = in[i];
    v.x = gelu(v.x);
    v.y = gelu(v.y);
    v.z = gelu(v.z);
    v.w = gelu(v.w);
    out[i] = v;
  }
}

__global__ void gelu_scalar(const float* __restrict__ in, float* __restrict__ out, int64_t begin,
                            int64_t end) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = begin + static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < end;
       i += stride)
    out[i] = gelu(in[i]);
}

extern "C" int kevin_forward(const kevin_args* args) {
  if (args->num_inputs < 1 || args->num_outputs < 1) return 1;
  const kevin_tensor& x = args->inputs[0];
  const kevin_tensor& y = args->outputs[0];
  if (x.dtype != KEVIN_F32 || y.dtype != KEVIN_F32 || !is_contiguous(x)) return 2;
  int64_t n = 1;
  for (int i = 0; i < x.ndim; ++i) n *= x.shape[i];
  int64_t ny = 1;
  for (int i = 0; i < y.ndim; ++i) ny *= y.shape[i];
  if (ny != n) return 3;
  if (n == 0) return 0;
  cudaStream_t stream = static_cast<cudaStream_t>(args->stream);
  const float* in = static_cast<const float*>(x.data);
  float* out = static_cast<float*>(y.data);
  const bool aligned =
      (reinterpret_cast<uintptr_t>(in) % 16 == 0) && (reinterpret_cast<uintptr_t>(out) % 16 == 0);
  const int threads = 256;
  const int64_t max_blocks = 8192;
  const int64_t n4 = aligned ? n / 4 : 0;
  if (n4 > 0) {
    int64_t blocks = (n4 + threads - 1) / threads;
    if (blocks > max_blocks) blocks = max_blocks;
    gelu_vec4<<<static_cast<unsigned>(blocks), threads, 0, stream>>>(
        reinterpret_cast<const float4*>(in), reinterpret_cast<float4*>(out), n4);
  }
  const int64_t begin = n4 * 4;
  if (begin < n) {
    int64_t blocks = (n - begin + threads - 1) / threads;
    if (blocks > max_blocks) blocks = max_blocks;
    gelu_scalar<<<static_cast<unsigned>(blocks), threads, 0, stream>>>(in, out, begin, n);
  }
  return cudaGetLastError() == cudaSuccess ? 0 : 4;
}
