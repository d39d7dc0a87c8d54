// sampler_kernels.cu — one token per row of logits in one launch: temperature, top-p over the
// whole vocabulary and the token's log-probability, without sorting and without the host.
// Sampling is a race: token i wins with probability p_i when its key is x_i/T plus Gumbel noise
// (Philox counters, so a row's draws do not depend on how the work is split into blocks).
#include <cfloat>
#include <climits>
#include <cstdint>

#include "train/model/kernel_math.cuh"
#include "train/model/kernels.h"

namespace kevin::train::kernels {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int64_t kChunk = 8192;  // logits per block of the first pass (a multiple of 4)
// The largest Gumbel noise uniform() can give: −log(−log(1 − 2^-24)) ≈ 16.64. A logit this far
// below the best key so far cannot win, and its noise is not drawn.
constexpr float kMaxNoise = 17.0f;

// Philox-4x32 with 10 rounds (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3").
__device__ __forceinline__ uint4 philox(uint4 counter, uint2 key) {
#pragma unroll
  for (int round = 0; round < 10; ++round) {
    const uint32_t hi0 = __umulhi(0xD2511F53u, counter.x), lo0 = 0xD2511F53u * counter.x;
    const uint32_t hi1 = __umulhi(0xCD9E8D57u, counter.z), lo1 = 0xCD9E8D57u * counter.z;
    counter = make_uint4(hi1 ^ counter.y ^ key.x, lo1, hi0 ^ counter.w ^ key.y, lo0);
    key.x += 0x9E3779B9u;
    key.y += 0xBB67AE85u;
  }
  return counter;
}

// Gumbel noise from 32 random bits: u in [2^-24, 1 − 2^-24], never 0 or 1. The inner log is
// the accurate one (u near 1 gives the largest noise); the outer one's absolute error is ~1e-7.
__device__ __forceinline__ float gumbel(uint32_t bits) {
  const float u = static_cast<float>(bits >> 9) * (1.0f / 8388608.0f) + (1.0f / 16777216.0f);
  return -__logf(-logf(u));
}

// The four random words for logits [4·group, 4·group + 4) of `row` in round `round` (0: the
// first draw; k: the k-th redraw of top-p's rejection).
__device__ __forceinline__ uint4 noise_words(int64_t group, int64_t row, uint32_t round,
                                             uint2 key) {
  return philox(make_uint4(static_cast<uint32_t>(group), static_cast<uint32_t>(group >> 32),
                           static_cast<uint32_t>(row), round),
                key);
}

__device__ __forceinline__ uint32_t word(const uint4& w, int j) {
  return j == 0 ? w.x : j == 1 ? w.y : j == 2 ? w.z : w.w;
}

// The race's leader: the largest key, the smallest index among equal keys (argmax's rule).
struct Leader {
  float key = -INFINITY;
  int32_t index = INT_MAX;
  __device__ __forceinline__ void take(float other_key, int32_t other_index) {
    if (other_key > key || (other_key == key && other_index < index)) {
      key = other_key;
      index = other_index;
    }
  }
};

// log Σ e^x, kept as a running max and the sum of e^(x − max).
struct LogSumExp {
  float max = -INFINITY, sum = 0;
  __device__ __forceinline__ void add(float x) {
    if (!(x > -INFINITY)) return;  // a masked logit (or NaN) adds nothing
    if (x > max) {
      sum = sum * __expf(max - x) + 1.0f;
      max = x;
    } else {
      sum += __expf(x - max);
    }
  }
  __device__ __forceinline__ void merge(float other_max, float other_sum) {
    if (other_sum == 0) return;
    if (sum == 0) {
      max = other_max;
      sum = other_sum;
      return;
    }
    const float top = fmaxf(max, other_max);
    sum = sum * __expf(max - top) + other_sum * __expf(other_max - top);
    max = top;
  }
  __device__ __forceinline__ float value() const { return max + logf(sum); }
};

// Block-wide reductions; every thread gets the result. `scratch` holds kWarps floats per value.
__device__ __forceinline__ Leader block_leader(Leader mine, float* keys, int32_t* indices) {
  for (int offset = 16; offset > 0; offset /= 2) {
    mine.take(__shfl_xor_sync(0xffffffffu, mine.key, offset),
              __shfl_xor_sync(0xffffffffu, mine.index, offset));
  }
  const int warp = threadIdx.x / 32;
  __syncthreads();  // the scratch may still be read from a previous reduction
  if (threadIdx.x % 32 == 0) {
    keys[warp] = mine.key;
    indices[warp] = mine.index;
  }
  __syncthreads();
  Leader all;
  for (int w = 0; w < kWarps; ++w) all.take(keys[w], indices[w]);
  return all;
}

__device__ __forceinline__ LogSumExp block_log_sum_exp(LogSumExp mine, float* maxes, float* sums) {
  for (int offset = 16; offset > 0; offset /= 2) {
    mine.merge(__shfl_xor_sync(0xffffffffu, mine.max, offset),
               __shfl_xor_sync(0xffffffffu, mine.sum, offset));
  }
  const int warp = threadIdx.x / 32;
  __syncthreads();
  if (threadIdx.x % 32 == 0) {
    maxes[warp] = mine.max;
    sums[warp] = mine.sum;
  }
  __syncthreads();
  LogSumExp all;
  for (int w = 0; w < kWarps; ++w) all.merge(maxes[w], sums[w]);
  return all;
}

__device__ __forceinline__ float block_sum(float mine, float* sums) {
  for (int offset = 16; offset > 0; offset /= 2) mine += __shfl_xor_sync(0xffffffffu, mine, offset);
  __syncthreads();
  if (threadIdx.x % 32 == 0) sums[threadIdx.x / 32] = mine;
  __syncthreads();
  float all = 0;
  for (int w = 0; w < kWarps; ++w) all += sums[w];
  return all;
}

// The race over logits [begin, end) of one row, among those whose scaled logit exceeds `floor`:
// the block's leader (every thread gets it). Without `noisy`, the key is the scaled logit. With
// `normalizer`, also the log-sum-exp of every scaled logit in the range (block-wide).
template <typename T>
__device__ Leader race(const T* x, int64_t begin, int64_t end, int64_t row, uint32_t round,
                       uint2 key, float inv_temperature, bool noisy, float floor,
                       LogSumExp* normalizer, float* scratch_a, float* scratch_b,
                       int32_t* indices) {
  Leader mine;
  LogSumExp sums;
  for (int64_t first = begin + 4 * threadIdx.x; first < end; first += 4 * kThreads) {
    float scaled[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      scaled[j] = first + j < end ? to_float(x[first + j]) * inv_temperature : -INFINITY;
      if (normalizer != nullptr && first + j < end) sums.add(scaled[j]);
    }
    const bool any = fmaxf(fmaxf(scaled[0], scaled[1]), fmaxf(scaled[2], scaled[3])) +
                         (noisy ? kMaxNoise : 0.0f) >
                     mine.key;
    if (!any) continue;
    const uint4 words = noisy ? noise_words(first / 4, row, round, key) : uint4{};
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      if (!(scaled[j] > floor)) continue;
      const float k = noisy ? scaled[j] + gumbel(word(words, j)) : scaled[j];
      mine.take(k, static_cast<int32_t>(first + j));
    }
  }
  if (normalizer != nullptr) *normalizer = block_log_sum_exp(sums, scratch_a, scratch_b);
  return block_leader(mine, scratch_a, indices);
}

// First pass: block (chunk, row) runs the race and the log-sum-exp over its chunk and writes
// (max, sum, key, index) to the workspace; the row's last block to finish merges the chunks
// and, for top-p, redraws until the winner lies in the nucleus.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    sample_kernel(const T* __restrict__ logits, int64_t vocab, float inv_temperature, float top_p,
                  bool greedy, const int64_t* __restrict__ seeds, float* __restrict__ workspace,
                  int32_t* __restrict__ arrivals, int64_t* __restrict__ tokens,
                  float* __restrict__ logprobs) {
  __shared__ float scratch_a[kWarps], scratch_b[kWarps];
  __shared__ int32_t scratch_i[kWarps];
  __shared__ bool merges;
  const int64_t row = blockIdx.y, chunk = blockIdx.x, chunks = gridDim.x;
  const T* x = logits + row * vocab;
  const uint64_t seed = greedy ? 0 : static_cast<uint64_t>(seeds[row]);
  const uint2 key = make_uint2(static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
  const int64_t begin = chunk * kChunk, end = min(vocab, begin + kChunk);

  LogSumExp normalizer;
  const Leader leader = race(x, begin, end, row, 0, key, inv_temperature, !greedy, -INFINITY,
                             &normalizer, scratch_a, scratch_b, scratch_i);
  float* part = workspace + (row * chunks + chunk) * 4;
  if (threadIdx.x == 0) {
    part[0] = normalizer.max;
    part[1] = normalizer.sum;
    part[2] = leader.key;
    part[3] = __int_as_float(leader.index);
  }
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    merges = atomicAdd(arrivals + row, 1) == static_cast<int32_t>(chunks) - 1;
    if (merges) arrivals[row] = 0;  // ready for a later launch that reuses the counters
  }
  __syncthreads();
  if (!merges) return;
  __threadfence();
  LogSumExp all;
  Leader winner;
  for (int64_t c = 0; c < chunks; ++c) {
    const float* p = workspace + (row * chunks + c) * 4;
    all.merge(__ldcg(p), __ldcg(p + 1));
    winner.take(__ldcg(p + 2), __float_as_int(__ldcg(p + 3)));
  }
  const float lse = all.value();
  float chosen = to_float(x[winner.index]) * inv_temperature;
  // Top-p: the nucleus is every token with less than top_p of the mass strictly above it. A
  // winner outside it has the nucleus wholly above it: race again among the logits above the
  // winner's, which samples p restricted to them; the first winner inside is a draw from p
  // restricted to the nucleus. The row's largest logit is always inside.
  if (!greedy && top_p < 1.0f) {
    for (uint32_t round = 1; chosen < all.max; ++round) {
      float above = 0;
      for (int64_t i = threadIdx.x; i < vocab; i += kThreads) {
        const float scaled = to_float(x[i]) * inv_temperature;
        if (scaled > chosen) above += __expf(scaled - lse);
      }
      if (block_sum(above, scratch_a) < top_p) break;
      winner = race(x, 0, vocab, row, round, key, inv_temperature, true, chosen, nullptr, scratch_a,
                    scratch_b, scratch_i);
      chosen = to_float(x[winner.index]) * inv_temperature;
    }
  }
  if (threadIdx.x == 0) {
    tokens[row] = winner.index;
    logprobs[row] = chosen - lse;
  }
}

}  // namespace

int64_t sample_workspace_floats(int64_t rows, int64_t vocab) {
  return rows * ((vocab + kChunk - 1) / kChunk) * 4;
}

cudaError_t sample_rows(const void* logits, ElementType type, int64_t rows, int64_t vocab,
                        float inv_temperature, float top_p, bool greedy, const int64_t* seeds,
                        float* workspace, int32_t* arrivals, int64_t* tokens, float* logprobs,
                        cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  if (rows < 0 || rows > 65535 || vocab <= 0 || vocab > INT_MAX || !(inv_temperature > 0)) {
    return cudaErrorInvalidValue;
  }
  const dim3 grid(static_cast<unsigned>((vocab + kChunk - 1) / kChunk),
                  static_cast<unsigned>(rows));
  return with_element_type(type, [&](auto element) {
    using T = decltype(element);
    sample_kernel<T><<<grid, kThreads, 0, stream>>>(static_cast<const T*>(logits), vocab,
                                                    inv_temperature, top_p, greedy, seeds,
                                                    workspace, arrivals, tokens, logprobs);
    return cudaGetLastError();
  });
}

}  // namespace kevin::train::kernels
