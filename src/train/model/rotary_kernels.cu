// rotary_kernels.cu — rotary embeddings: one thread per (position, head, i < dim/2) pair,
// which owns elements i and i + dim/2, the two that rotate_half mixes; and the decode step's
// variant that also appends the new keys and values to the paged cache.
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

// One block per decode row: its threads take (head, i < dim/2) pairs over the q heads, then the
// k heads (rotated into the pool), then the v heads (copied into the pool).
template <typename T>
__global__ void __launch_bounds__(kThreads)
    rotary_store_kernel(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                        RotaryStoreShape shape, const float* __restrict__ cos,
                        const float* __restrict__ sin, const int64_t* __restrict__ slots,
                        T* __restrict__ q_out, T* __restrict__ k_pool, T* __restrict__ v_pool) {
  const int64_t n = blockIdx.x, half = shape.dim / 2;
  const int64_t pairs = (shape.heads + 2 * shape.kv_heads) * half;
  const float* c = cos + n * shape.dim;
  const float* s = sin + n * shape.dim;
  const int64_t slot_offset = slots[n] * shape.kv_heads * shape.dim;
  for (int64_t p = threadIdx.x; p < pairs; p += kThreads) {
    const int64_t i = p % half, h = p / half;
    const T* in;
    T* out;
    bool rotate = true;
    if (h < shape.heads) {
      in = q + n * shape.q_row + h * shape.dim;
      out = q_out + (n * shape.heads + h) * shape.dim;
    } else if (h < shape.heads + shape.kv_heads) {
      const int64_t kv = h - shape.heads;
      in = k + n * shape.k_row + kv * shape.dim;
      out = k_pool + slot_offset + kv * shape.dim;
    } else {
      const int64_t kv = h - shape.heads - shape.kv_heads;
      in = v + n * shape.v_row + kv * shape.dim;
      out = v_pool + slot_offset + kv * shape.dim;
      rotate = false;
    }
    const float lo = to_float(in[i]), hi = to_float(in[i + half]);
    out[i] = from_float<T>(rotate ? lo * c[i] - hi * s[i] : lo);
    out[i + half] = from_float<T>(rotate ? hi * c[i + half] + lo * s[i + half] : hi);
  }
}

}  // namespace

cudaError_t rotary_store(const void* q, const void* k, const void* v, ElementType type,
                         const RotaryStoreShape& shape, const float* cos, const float* sin,
                         const int64_t* slots, void* q_out, void* k_pool, void* v_pool,
                         cudaStream_t stream) {
  if (shape.queries == 0) return cudaSuccess;
  return with_element_type(type, [&](auto element) {
    using T = decltype(element);
    rotary_store_kernel<T><<<static_cast<unsigned>(shape.queries), kThreads, 0, stream>>>(
        static_cast<const T*>(q), static_cast<const T*>(k), static_cast<const T*>(v), shape, cos,
        sin, slots, static_cast<T*>(q_out), static_cast<T*>(k_pool), static_cast<T*>(v_pool));
    return cudaGetLastError();
  });
}

cudaError_t rotary(const void* x, ElementType type, const RotaryShape& shape, const float* cos,
                   const float* sin, bool inverse, void* out, cudaStream_t stream) {
  return with_element_type(type, [&](auto element) {
    return rotary_as<decltype(element)>(x, shape, cos, sin, inverse, out, stream);
  });
}

}  // namespace kevin::train::kernels
