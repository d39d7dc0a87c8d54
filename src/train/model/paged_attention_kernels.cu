// paged_attention_kernels.cu — decode attention over a paged KV cache (split-K): one block per
// (partition of keys, kv head, query) scores its tokens for all the query heads that share the
// kv head, then a second kernel merges the partitions by their log-sum-exp.
#include <algorithm>
#include <cfloat>
#include <cstdint>

#include "train/model/kernel_math.cuh"
#include "train/model/kernels.h"

namespace kevin::train::kernels {
namespace {

constexpr int kThreads = 128;
constexpr int kMaxDim = 256;

// The pool slot of token `j` of a sequence whose pages are `pages`.
__device__ __forceinline__ int64_t slot_of(const int32_t* pages, int64_t j, int64_t page_size) {
  return static_cast<int64_t>(pages[j / page_size]) * page_size + j % page_size;
}

// Teams of threads that each read whole value rows in 16-byte vectors (partition_kernel).
template <typename T>
int value_slices(int64_t dim) {
  return kThreads / static_cast<int>(dim / kPerVector<T>);
}

// Loads issued together before their arithmetic: one chain of memory latency per kInFlight
// loads rather than per load (the loops below would otherwise wait on each in turn).
constexpr int kInFlight = 4;

// Every query head's q · k over `dim` elements for one key row, read once in 16-byte vectors
// (the launcher checks the alignment); q is in shared memory, groups x dim.
template <typename T>
__device__ __forceinline__ void dot_rows(const float* q, const T* k, int dim, int groups,
                                         float* sums) {
  constexpr int kWidth = kPerVector<T>;
  for (int base = 0; base < dim; base += kInFlight * kWidth) {
    uint4 chunks[kInFlight];
#pragma unroll
    for (int j = 0; j < kInFlight; ++j) {
      if (base + j * kWidth < dim)
        chunks[j] = *reinterpret_cast<const uint4*>(k + base + j * kWidth);
    }
#pragma unroll
    for (int j = 0; j < kInFlight; ++j) {
      const int d = base + j * kWidth;
      if (d >= dim) break;
      const T* elements = reinterpret_cast<const T*>(&chunks[j]);
#pragma unroll
      for (int e = 0; e < kWidth; ++e) {
        const float key = to_float(elements[e]);
#pragma unroll
        for (int g = 0; g < kMaxQueryGroups; ++g) {
          if (g < groups) sums[g] += q[g * dim + d + e] * key;
        }
      }
    }
  }
}

// Shared memory: q (groups x dim), then scores (groups x partition_size), then the PV
// partial sums (value_slices<T>(dim) x groups x dim), all fp32.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    partition_kernel(const T* __restrict__ q, const T* __restrict__ k_pool,
                     const T* __restrict__ v_pool, const int32_t* __restrict__ block_table,
                     const int32_t* __restrict__ lengths, PagedAttentionShape shape, float scale,
                     float* __restrict__ workspace) {
  extern __shared__ float shared[];
  const int partition = blockIdx.x, kv = blockIdx.y;
  const int64_t n = blockIdx.z;
  const int groups = static_cast<int>(shape.heads / shape.kv_heads),
            dim = static_cast<int>(shape.dim);
  const int64_t length = lengths[n], start = partition * shape.partition_size;
  const int64_t count =
      length - start < shape.partition_size ? length - start : shape.partition_size;
  const int64_t kv_stride = shape.kv_heads * shape.dim;  // between consecutive slots
  // This partition's result for query head h of row n: (dim values, max, sum).
  auto result = [&](int g) {
    const int64_t h = static_cast<int64_t>(kv) * groups + g;
    return workspace + ((n * shape.heads + h) * shape.partitions + partition) * (shape.dim + 2);
  };
  if (count <= 0) return;  // past the sequence's end: the merge does not read it
  float* q_s = shared;
  float* scores = q_s + groups * dim;
  float* partial = scores + groups * shape.partition_size;
  for (int i = threadIdx.x; i < groups * dim; i += kThreads) {
    const int64_t h = static_cast<int64_t>(kv) * groups + i / dim;
    q_s[i] = to_float(q[(n * shape.heads + h) * shape.dim + i % dim]) * scale;
  }
  __syncthreads();
  const int32_t* pages = block_table + n * shape.max_pages;
  // Scores: one token per thread.
  for (int64_t t = threadIdx.x; t < count; t += kThreads) {
    const T* key = k_pool + slot_of(pages, start + t, shape.page_size) * kv_stride + kv * shape.dim;
    float sums[kMaxQueryGroups] = {};
    dot_rows(q_s, key, dim, groups, sums);
#pragma unroll
    for (int g = 0; g < kMaxQueryGroups; ++g) {
      if (g < groups) scores[g * shape.partition_size + t] = sums[g];
    }
  }
  __syncthreads();
  // Softmax numerators per query head: one warp per head, the max then the sum.
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int g = warp; g < groups; g += kThreads / 32) {
    float* row = scores + g * shape.partition_size;
    float top = -FLT_MAX;
    for (int64_t t = lane; t < count; t += 32) top = fmaxf(top, row[t]);
    for (int offset = 16; offset > 0; offset /= 2)
      top = fmaxf(top, __shfl_xor_sync(0xffffffffu, top, offset));
    float sum = 0;
    for (int64_t t = lane; t < count; t += 32) {
      row[t] = __expf(row[t] - top);
      sum += row[t];
    }
    for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    if (lane == 0) {
      result(g)[dim] = top;
      result(g)[dim + 1] = sum;
    }
  }
  __syncthreads();
  // Weighted values: a value row is read as 16-byte vectors by `lanes` threads side by side, and
  // the block's threads form `slices` such teams, each summing every slices-th token: many
  // independent loads in flight rather than one long chain per thread.
  constexpr int kWidth = kPerVector<T>;
  const int lanes = dim / kWidth, slices = kThreads / lanes;
  const int vector_lane = threadIdx.x % lanes, slice = threadIdx.x / lanes;
  if (slice < slices) {
    float acc[kMaxQueryGroups][kWidth] = {};
    const int64_t column = kv * shape.dim + vector_lane * kWidth;
    for (int64_t first = slice; first < count; first += kInFlight * slices) {
      uint4 chunks[kInFlight];
#pragma unroll
      for (int j = 0; j < kInFlight; ++j) {
        const int64_t t = first + j * slices;
        if (t < count) {
          chunks[j] = *reinterpret_cast<const uint4*>(
              v_pool + slot_of(pages, start + t, shape.page_size) * kv_stride + column);
        }
      }
#pragma unroll
      for (int j = 0; j < kInFlight; ++j) {
        const int64_t t = first + j * slices;
        if (t >= count) break;
        const T* elements = reinterpret_cast<const T*>(&chunks[j]);
#pragma unroll
        for (int g = 0; g < kMaxQueryGroups; ++g) {
          if (g >= groups) break;
          const float weight = scores[g * shape.partition_size + t];
#pragma unroll
          for (int e = 0; e < kWidth; ++e) acc[g][e] += weight * to_float(elements[e]);
        }
      }
    }
#pragma unroll
    for (int g = 0; g < kMaxQueryGroups; ++g) {
      if (g >= groups) break;
#pragma unroll
      for (int e = 0; e < kWidth; ++e)
        partial[(slice * groups + g) * dim + vector_lane * kWidth + e] = acc[g][e];
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < groups * dim; i += kThreads) {
    float total = 0;
    for (int s = 0; s < slices; ++s) total += partial[s * groups * dim + i];
    result(i / dim)[i % dim] = total;
  }
}

// One block per (query, head): out = Σ_p e^(m_p − M) acc_p / Σ_p e^(m_p − M) l_p over the
// partitions that hold keys of the query's sequence (a CUDA graph launches for the longest
// context it serves; the partitions past a short sequence's end are never read).
template <typename T>
__global__ void combine_kernel(const float* __restrict__ workspace,
                               const int32_t* __restrict__ lengths, PagedAttentionShape shape,
                               T* __restrict__ out) {
  const int64_t row = blockIdx.x;  // n * heads + h
  const float* parts = workspace + row * shape.partitions * (shape.dim + 2);
  const int64_t length = lengths[row / shape.heads];
  const int64_t used_by_length = (length + shape.partition_size - 1) / shape.partition_size;
  const int64_t used = used_by_length < shape.partitions ? used_by_length : shape.partitions;
  float top = -FLT_MAX;
  for (int64_t p = 0; p < used; ++p) top = fmaxf(top, parts[p * (shape.dim + 2) + shape.dim]);
  for (int64_t d = threadIdx.x; d < shape.dim; d += blockDim.x) {
    float numerator = 0, denominator = 0;
    for (int64_t p = 0; p < used; ++p) {
      const float* part = parts + p * (shape.dim + 2);
      const float weight = __expf(part[shape.dim] - top);
      numerator += weight * part[d];
      denominator += weight * part[shape.dim + 1];
    }
    out[row * shape.dim + d] = from_float<T>(numerator / denominator);
  }
}

template <typename T>
size_t shared_bytes(const PagedAttentionShape& shape) {
  const int64_t groups = shape.heads / shape.kv_heads;
  const int64_t slices = value_slices<T>(shape.dim);
  return sizeof(float) * static_cast<size_t>(groups * shape.dim + groups * shape.partition_size +
                                             slices * groups * shape.dim);
}

template <typename T>
cudaError_t paged_decode_attention_as(const void* q, const void* k_pool, const void* v_pool,
                                      const int32_t* block_table, const int32_t* lengths,
                                      const PagedAttentionShape& shape, float scale,
                                      float* workspace, void* out, cudaStream_t stream) {
  if (shape.queries == 0) return cudaSuccess;
  if (!vector_aligned({k_pool, v_pool}, shape.dim, sizeof(T))) return cudaErrorMisalignedAddress;
  const size_t shared = shared_bytes<T>(shape);
  if (shared > 48 * 1024) {
    const cudaError_t status = cudaFuncSetAttribute(
        partition_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared));
    if (status != cudaSuccess) return status;
  }
  const dim3 grid(static_cast<unsigned>(shape.partitions), static_cast<unsigned>(shape.kv_heads),
                  static_cast<unsigned>(shape.queries));
  partition_kernel<T><<<grid, kThreads, shared, stream>>>(
      static_cast<const T*>(q), static_cast<const T*>(k_pool), static_cast<const T*>(v_pool),
      block_table, lengths, shape, scale, workspace);
  const unsigned threads = static_cast<unsigned>(std::min<int64_t>(shape.dim, 256));
  combine_kernel<T><<<static_cast<unsigned>(shape.queries * shape.heads), threads, 0, stream>>>(
      workspace, lengths, shape, static_cast<T*>(out));
  return cudaGetLastError();
}

}  // namespace

cudaError_t paged_decode_attention(const void* q, ElementType type, const void* k_pool,
                                   const void* v_pool, const int32_t* block_table,
                                   const int32_t* lengths, const PagedAttentionShape& shape,
                                   float scale, float* workspace, void* out, cudaStream_t stream) {
  if (shape.kv_heads <= 0 || shape.heads % shape.kv_heads != 0 ||
      shape.heads / shape.kv_heads > kMaxQueryGroups || shape.dim <= 0 || shape.dim > kMaxDim ||
      shape.page_size <= 0 || shape.partition_size <= 0 || shape.partitions <= 0) {
    return cudaErrorInvalidValue;
  }
  return with_element_type(type, [&](auto element) {
    return paged_decode_attention_as<decltype(element)>(q, k_pool, v_pool, block_table, lengths,
                                                        shape, scale, workspace, out, stream);
  });
}

}  // namespace kevin::train::kernels
