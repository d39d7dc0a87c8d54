// token_scores_kernels.cu — one block per row of logits. The forward keeps an online
// (max, Σe^(x−max), Σe^(x−max)·x) per thread, so log-sum-exp and entropy need a single pass
// over the vocabulary; the backward recomputes softmax from the saved log-sum-exp. Rows are
// read as 16-byte vectors when their length and alignment allow.
#include <cmath>
#include <cstdint>

#include "train/model/kernel_math.cuh"
#include "train/model/kernels.h"

namespace kevin::train::kernels {
namespace {

constexpr int kThreads = 512;
constexpr int kWarps = kThreads / 32;

// Running softmax statistics of the values seen so far: max m, s = Σe^(x−m), t = Σe^(x−m)·x.
struct Stats {
  float m, s, t;
};

__device__ __forceinline__ void add(Stats& a, float x) {
  if (x == -INFINITY) return;  // contributes nothing, and would make e^(x−m) NaN while m is −∞
  if (x > a.m) {
    const float c = __expf(a.m - x);
    a.s = a.s * c + 1.0f;
    a.t = a.t * c + x;
    a.m = x;
  } else {
    const float e = __expf(x - a.m);
    a.s += e;
    a.t += e * x;
  }
}

__device__ __forceinline__ Stats combine(const Stats& a, const Stats& b) {
  if (a.s == 0.0f) return b;
  if (b.s == 0.0f) return a;
  const float m = fmaxf(a.m, b.m), ca = __expf(a.m - m), cb = __expf(b.m - m);
  return {m, a.s * ca + b.s * cb, a.t * ca + b.t * cb};
}

__device__ Stats block_reduce(Stats v) {
  __shared__ Stats partial[kWarps];
  for (int offset = 16; offset > 0; offset /= 2) {
    const Stats other{__shfl_xor_sync(0xffffffffu, v.m, offset),
                      __shfl_xor_sync(0xffffffffu, v.s, offset),
                      __shfl_xor_sync(0xffffffffu, v.t, offset)};
    v = combine(v, other);
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < kWarps ? partial[lane] : Stats{-INFINITY, 0.0f, 0.0f};
    for (int offset = 16; offset > 0; offset /= 2) {
      const Stats other{__shfl_xor_sync(0xffffffffu, v.m, offset),
                        __shfl_xor_sync(0xffffffffu, v.s, offset),
                        __shfl_xor_sync(0xffffffffu, v.t, offset)};
      v = combine(v, other);
    }
  }
  return v;  // complete in thread 0
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    forward_kernel(const T* __restrict__ logits, const int64_t* __restrict__ targets, int64_t vocab,
                   float inv_t, bool vectorized, float* logprobs, float* entropy, float* lse_out) {
  const int64_t row = blockIdx.x;
  const T* x = logits + row * vocab;
  Stats acc{-INFINITY, 0.0f, 0.0f};
  if (vectorized) {
    const auto* vectors = reinterpret_cast<const uint4*>(x);
    const int64_t count = vocab / kPerVector<T>;
    for (int64_t i = threadIdx.x; i < count; i += kThreads) {
      const uint4 raw = vectors[i];
      const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
      for (int k = 0; k < kPerVector<T>; ++k) add(acc, to_float(e[k]) * inv_t);
    }
  } else {
    for (int64_t i = threadIdx.x; i < vocab; i += kThreads) add(acc, to_float(x[i]) * inv_t);
  }
  acc = block_reduce(acc);
  if (threadIdx.x == 0) {
    const float lse = acc.m + logf(acc.s);
    const int64_t target = targets[row];
    const float target_logit = (target >= 0 && target < vocab) ? to_float(x[target]) * inv_t : NAN;
    logprobs[row] = target_logit - lse;
    entropy[row] = lse - acc.t / acc.s;
    lse_out[row] = lse;
  }
}

template <typename T>
__device__ __forceinline__ T gradient(T logit, int64_t column, int64_t target, float lse, float g,
                                      float inv_t) {
  const float p = __expf(to_float(logit) * inv_t - lse);
  return from_float<T>(column == target ? g * (1.0f - p) : -g * p);
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    backward_kernel(const T* __restrict__ logits, const int64_t* __restrict__ targets,
                    const float* __restrict__ lse, const float* __restrict__ grad, int64_t vocab,
                    float inv_t, bool vectorized, T* __restrict__ out) {
  const int64_t row = blockIdx.x;
  const T* x = logits + row * vocab;
  T* y = out + row * vocab;
  const float l = lse[row], g = grad[row] * inv_t;
  const int64_t target = targets[row];
  if (vectorized) {
    const auto* in_vectors = reinterpret_cast<const uint4*>(x);
    auto* out_vectors = reinterpret_cast<uint4*>(y);
    const int64_t count = vocab / kPerVector<T>;
    for (int64_t i = threadIdx.x; i < count; i += kThreads) {
      const uint4 raw = in_vectors[i];
      const T* e = reinterpret_cast<const T*>(&raw);
      uint4 result;
      T* r = reinterpret_cast<T*>(&result);
#pragma unroll
      for (int k = 0; k < kPerVector<T>; ++k)
        r[k] = gradient(e[k], i * kPerVector<T> + k, target, l, g, inv_t);
      out_vectors[i] = result;
    }
  } else {
    for (int64_t i = threadIdx.x; i < vocab; i += kThreads)
      y[i] = gradient(x[i], i, target, l, g, inv_t);
  }
}

template <typename T>
cudaError_t forward_as(const void* logits, const int64_t* targets, int64_t rows, int64_t vocab,
                       float inv_t, float* logprobs, float* entropy, float* lse,
                       cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  const bool vectorized = vector_aligned({logits}, vocab, static_cast<int>(sizeof(T)));
  forward_kernel<T><<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(
      static_cast<const T*>(logits), targets, vocab, inv_t, vectorized, logprobs, entropy, lse);
  return cudaGetLastError();
}

template <typename T>
cudaError_t backward_as(const void* logits, const int64_t* targets, const float* lse,
                        const float* grad, int64_t rows, int64_t vocab, float inv_t,
                        void* grad_logits, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  const bool vectorized = vector_aligned({logits, grad_logits}, vocab, static_cast<int>(sizeof(T)));
  backward_kernel<T><<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(
      static_cast<const T*>(logits), targets, lse, grad, vocab, inv_t, vectorized,
      static_cast<T*>(grad_logits));
  return cudaGetLastError();
}

}  // namespace

cudaError_t token_scores_forward(const void* logits, ElementType type, const int64_t* targets,
                                 int64_t rows, int64_t vocab, float inv_temperature,
                                 float* logprobs, float* entropy, float* lse, cudaStream_t stream) {
  return with_element_type(type, [&](auto element) {
    return forward_as<decltype(element)>(logits, targets, rows, vocab, inv_temperature, logprobs,
                                         entropy, lse, stream);
  });
}

cudaError_t token_scores_backward(const void* logits, ElementType type, const int64_t* targets,
                                  const float* lse, const float* grad, int64_t rows, int64_t vocab,
                                  float inv_temperature, void* grad_logits, cudaStream_t stream) {
  return with_element_type(type, [&](auto element) {
    return backward_as<decltype(element)>(logits, targets, lse, grad, rows, vocab, inv_temperature,
                                          grad_logits, stream);
  });
}

}  // namespace kevin::train::kernels
