// swiglu_kernels.cu — SwiGLU on the fused gate/up projection's output: one elementwise pass
// forward (no stored silu(gate)) and one backward writing both halves of the input's
// gradient in place of the stock path's five passes and a concatenation.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "train/model/kernel_math.cuh"
#include "train/model/kernels.h"

namespace kevin::train::kernels {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 8192;

__device__ __forceinline__ float sigmoid(float x) { return 1.0f / (1.0f + __expf(-x)); }

// load/store move `per` consecutive elements: one 16-byte vector, or one element. `per` is an
// array bound here, so size_t (an int bound converts, which -Wsign-conversion reports).
template <typename T, size_t per>
__device__ __forceinline__ void load(const T* p, T (&out)[per]) {
  if constexpr (per == 1) {
    out[0] = *p;
  } else {
    const uint4 raw = *reinterpret_cast<const uint4*>(p);
    const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
    for (size_t k = 0; k < per; ++k) out[k] = e[k];
  }
}

template <typename T, size_t per>
__device__ __forceinline__ void store(T* p, const T (&in)[per]) {
  if constexpr (per == 1) {
    *p = in[0];
  } else {
    uint4 raw;
    T* e = reinterpret_cast<T*>(&raw);
#pragma unroll
    for (size_t k = 0; k < per; ++k) e[k] = in[k];
    *reinterpret_cast<uint4*>(p) = raw;
  }
}

template <typename T, int per>
__global__ void __launch_bounds__(kThreads)
    forward_kernel(const T* __restrict__ gate_up, int64_t rows, int64_t width,
                   T* __restrict__ out) {
  const int64_t per_row = width / per, count = rows * per_row;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(kThreads) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * kThreads) {
    const int64_t row = i / per_row, column = (i % per_row) * per;
    T gate[per], up[per], result[per];
    load<T, per>(gate_up + row * 2 * width + column, gate);
    load<T, per>(gate_up + row * 2 * width + width + column, up);
#pragma unroll
    for (int k = 0; k < per; ++k) {
      const float g = to_float(gate[k]);
      result[k] = from_float<T>(g * sigmoid(g) * to_float(up[k]));
    }
    store<T, per>(out + row * width + column, result);
  }
}

template <typename T, int per>
__global__ void __launch_bounds__(kThreads)
    backward_kernel(const T* __restrict__ gate_up, const T* __restrict__ grad, int64_t rows,
                    int64_t width, T* __restrict__ grad_gate_up) {
  const int64_t per_row = width / per, count = rows * per_row;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(kThreads) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * kThreads) {
    const int64_t row = i / per_row, column = (i % per_row) * per;
    T gate[per], up[per], dh[per], dgate[per], dup[per];
    load<T, per>(gate_up + row * 2 * width + column, gate);
    load<T, per>(gate_up + row * 2 * width + width + column, up);
    load<T, per>(grad + row * width + column, dh);
#pragma unroll
    for (int k = 0; k < per; ++k) {
      const float g = to_float(gate[k]), u = to_float(up[k]), d = to_float(dh[k]), s = sigmoid(g);
      dup[k] = from_float<T>(d * g * s);
      dgate[k] = from_float<T>(d * u * s * (1.0f + g * (1.0f - s)));
    }
    store<T, per>(grad_gate_up + row * 2 * width + column, dgate);
    store<T, per>(grad_gate_up + row * 2 * width + width + column, dup);
  }
}

unsigned blocks_for(int64_t count) {
  return static_cast<unsigned>(
      std::max<int64_t>(1, std::min<int64_t>(kMaxBlocks, (count + kThreads - 1) / kThreads)));
}

template <typename T>
cudaError_t forward_as(const void* gate_up, int64_t rows, int64_t width, void* out,
                       cudaStream_t stream) {
  if (rows == 0 || width == 0) return cudaSuccess;
  const auto* in = static_cast<const T*>(gate_up);
  auto* result = static_cast<T*>(out);
  if (vector_aligned({gate_up, out}, width, static_cast<int>(sizeof(T)))) {
    constexpr int per = kPerVector<T>;
    forward_kernel<T, per>
        <<<blocks_for(rows * width / per), kThreads, 0, stream>>>(in, rows, width, result);
  } else {
    forward_kernel<T, 1>
        <<<blocks_for(rows * width), kThreads, 0, stream>>>(in, rows, width, result);
  }
  return cudaGetLastError();
}

template <typename T>
cudaError_t backward_as(const void* gate_up, const void* grad, int64_t rows, int64_t width,
                        void* grad_gate_up, cudaStream_t stream) {
  if (rows == 0 || width == 0) return cudaSuccess;
  const auto* in = static_cast<const T*>(gate_up);
  const auto* g = static_cast<const T*>(grad);
  auto* result = static_cast<T*>(grad_gate_up);
  if (vector_aligned({gate_up, grad, grad_gate_up}, width, static_cast<int>(sizeof(T)))) {
    constexpr int per = kPerVector<T>;
    backward_kernel<T, per>
        <<<blocks_for(rows * width / per), kThreads, 0, stream>>>(in, g, rows, width, result);
  } else {
    backward_kernel<T, 1>
        <<<blocks_for(rows * width), kThreads, 0, stream>>>(in, g, rows, width, result);
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t swiglu_forward(const void* gate_up, ElementType type, int64_t rows, int64_t width,
                           void* out, cudaStream_t stream) {
  return with_element_type(type, [&](auto element) {
    return forward_as<decltype(element)>(gate_up, rows, width, out, stream);
  });
}

cudaError_t swiglu_backward(const void* gate_up, const void* grad, ElementType type, int64_t rows,
                            int64_t width, void* grad_gate_up, cudaStream_t stream) {
  return with_element_type(type, [&](auto element) {
    return backward_as<decltype(element)>(gate_up, grad, rows, width, grad_gate_up, stream);
  });
}

}  // namespace kevin::train::kernels
