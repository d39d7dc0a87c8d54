// kernel_math.cuh — device helpers shared by the trainer's kernels: fp32 conversions of the
// element types and the 16-byte vector width, so every kernel computes in fp32 and moves
// data in whole vectors.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <initializer_list>

#include "train/model/kernels.h"

namespace kevin::train::kernels {

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }

template <typename T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16(x);
}
template <>
__device__ __forceinline__ __half from_float<__half>(float x) {
  return __float2half(x);
}

// Elements per 16-byte vector (uint4).
template <typename T>
constexpr int kPerVector = 16 / static_cast<int>(sizeof(T));

// Whether rows of `length` elements of `element_size` bytes starting at each pointer can be
// moved as 16-byte vectors.
inline bool vector_aligned(std::initializer_list<const void*> pointers, int64_t length,
                           int element_size) {
  for (const void* p : pointers) {
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0) return false;
  }
  return (length * element_size) % 16 == 0;
}

// Calls fn(T{}) with T the C++ element type of `type` (the argument only carries the type)
// and returns its result: one switch for every launcher.
template <typename Fn>
cudaError_t with_element_type(ElementType type, Fn&& fn) {
  switch (type) {
    case ElementType::kFloat32:
      return fn(float{});
    case ElementType::kBFloat16:
      return fn(__nv_bfloat16{});
    case ElementType::kFloat16:
      return fn(__half{});
  }
  return cudaErrorInvalidValue;
}

}  // namespace kevin::train::kernels
