// rotary_kernels.cu — rotary embeddings: one thread per (position, head, i < dim/2) pair,
// which owns elements i and i + dim/2, the two that rotate_half mixes.
#include <algorithm>
#include <cstdint>

#include "train/model/kernel_math.cuh"
#include "train/model/kernels.h"

namespace kevin::train::kernels {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 8192;

template <typename T>
__global__ void __launch_bounds__(kThreads)
    rotary_kernel(const T* __restrict__ x, RotaryShape shape, const float* __restrict__ cos,
                  const float* __restrict__ sin, bool inverse, T* __restrict__ out) {
  const int64_t half = shape.dim / 2, count = shape.batch * shape.seq * shape.heads * half;
  for (int64_t n = blockIdx.x * static_cast<int64_t>(kThreads) + threadIdx.x; n < count;
       n += static_cast<int64_t>(gridDim.x) * kThreads) {
    const int64_t i = n % half, h = (n / half) % shape.heads, bt = n / (half * shape.heads);
    const int64_t t = bt % shape.seq, b = bt / shape.seq;
    const T* in = x + b * shape.stride_b + t * shape.stride_t + h * shape.stride_h;
    const float* c = cos + bt * shape.dim;
    const float* s = sin + bt * shape.dim;
    const float lo = to_float(in[i]), hi = to_float(in[i + half]);
    float out_lo, out_hi;
    if (inverse) {
      out_lo = lo * c[i] + hi * s[i + half];
      out_hi = hi * c[i + half] - lo * s[i];
    } else {
      out_lo = lo * c[i] - hi * s[i];
      out_hi = hi * c[i + half] + lo * s[i + half];
    }
    T* o = out + ((b * shape.seq + t) * shape.heads + h) * shape.dim;
    o[i] = from_float<T>(out_lo);
    o[i + half] = from_float<T>(out_hi);
  }
}

template <typename T>
cudaError_t rotary_as(const void* x, const RotaryShape& shape, const float* cos, const float* sin,
                      bool inverse, void* out, cudaStream_t stream) {
  const int64_t count = shape.batch * shape.seq * shape.heads * (shape.dim / 2);
  if (count == 0) return cudaSuccess;
  const auto blocks =
      static_cast<unsigned>(std::min<int64_t>(kMaxBlocks, (count + kThreads - 1) / kThreads));
  rotary_kernel<T><<<blocks, kThreads, 0, stream>>>(static_cast<const T*>(x), shape, cos, sin,
                                                    inverse, static_cast<T*>(out));
  return cudaGetLastError();
}

}  // namespace

cudaError_t rotary(const void* x, ElementType type, const RotaryShape& shape, const float* cos,
                   const float* sin, bool inverse, void* out, cudaStream_t stream) {
  return with_element_type(type, [&](auto element) {
    return rotary_as<decltype(element)>(x, shape, cos, sin, inverse, out, stream);
  });
}

}  // namespace kevin::train::kernels
