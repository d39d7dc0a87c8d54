// paged_attention_kernels.cu — decode attention over a paged KV cache (split-K) in one launch:
// one block per (partition of keys, kv head, query) stages the partition's key and value rows in
// shared memory once, one warp per query head of the group scores and weighs them, and the last
// block of a query's partitions to finish merges them by their log-sum-exp.
#include <cfloat>
#include <cstdint>

#include "train/model/kernel_math.cuh"
#include "train/model/kernels.h"

namespace kevin::train::kernels {
namespace {

constexpr int kPartition = static_cast<int>(kAttentionPartition);

__device__ __forceinline__ float warp_max(float x) {
  for (int offset = 16; offset > 0; offset /= 2)
    x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, offset));
  return x;
}

__device__ __forceinline__ float warp_sum(float x) {
  for (int offset = 16; offset > 0; offset /= 2) x += __shfl_xor_sync(0xffffffffu, x, offset);
  return x;
}

// Dynamic shared memory of one block, in this order: keys (kPartition rows of kDim elements plus
// one 16-byte vector of padding, so the lanes of a warp reading a row each hit other banks),
// values (kPartition rows of kDim), then per query head the scaled query (kDim floats) and the
// partition's softmax numerators (kPartition floats).
template <typename T, int kDim>
struct SharedLayout {
  static constexpr int kKeyRow = kDim + kPerVector<T>;
  static constexpr size_t kKeys = sizeof(T) * kPartition * kKeyRow;
  static constexpr size_t kValues = sizeof(T) * kPartition * kDim;
  static constexpr size_t per_group() { return sizeof(float) * (kDim + kPartition); }
  static size_t bytes(int groups) {
    return kKeys + kValues + per_group() * static_cast<size_t>(groups);
  }
};

// q · key over kDim elements, the key read from shared memory in 16-byte vectors and the query
// (fp32, shared) broadcast to every lane; four partial sums for the FMA pipeline.
template <typename T, int kDim>
__device__ __forceinline__ float dot(const float* query, const T* key) {
  constexpr int kVector = kPerVector<T>;
  float sums[4] = {};
#pragma unroll
  for (int c = 0; c < kDim / kVector; ++c) {
    const uint4 chunk = *reinterpret_cast<const uint4*>(key + c * kVector);
    const T* elements = reinterpret_cast<const T*>(&chunk);
#pragma unroll
    for (int e = 0; e < kVector; ++e) sums[e % 4] += query[c * kVector + e] * to_float(elements[e]);
  }
  return (sums[0] + sums[1]) + (sums[2] + sums[3]);
}

// At most three blocks of eight warps per SM's registers: enough warps to hide the latency of
// a block's short chains, without the full unroll of the dot product spilling.
template <typename T, int kDim>
__global__ void __launch_bounds__(kMaxQueryGroups * 32, 3)
    attention_kernel(const T* __restrict__ q, const T* __restrict__ k_pool,
                     const T* __restrict__ v_pool, const int32_t* __restrict__ block_table,
                     const int32_t* __restrict__ lengths, PagedAttentionShape shape, float scale,
                     float* __restrict__ workspace, int32_t* __restrict__ arrivals,
                     T* __restrict__ out) {
  using Layout = SharedLayout<T, kDim>;
  constexpr int kVector = kPerVector<T>, kVectorsPerRow = kDim / kVector;
  constexpr int kPerLane = kDim / 32;  // value elements a lane weighs and sums
  extern __shared__ __align__(16) unsigned char shared[];
  __shared__ int32_t pages[kPartition + 1];
  __shared__ bool merges;
  T* keys = reinterpret_cast<T*>(shared);
  T* values = reinterpret_cast<T*>(shared + Layout::kKeys);
  // Partitions vary slowest, so the blocks of first partitions, which every sequence has, start
  // first and those past short sequences' ends (they return at once) come last.
  const int kv = static_cast<int>(blockIdx.x), partition = static_cast<int>(blockIdx.z);
  const int64_t n = blockIdx.y;
  const int groups = static_cast<int>(blockDim.x / 32), group = static_cast<int>(threadIdx.x / 32);
  const int lane = static_cast<int>(threadIdx.x % 32);
  float* query = reinterpret_cast<float*>(shared + Layout::kKeys + Layout::kValues) +
                 group * (kDim + kPartition);
  float* weights = query + kDim;

  const int page_size = static_cast<int>(shape.page_size);
  const int length = lengths[n], start = partition * kPartition;
  const int count = min(length - start, kPartition);
  if (count <= 0) return;  // past the sequence's end: nobody waits for this partition
  const int used = min((length + kPartition - 1) / kPartition, static_cast<int>(shape.partitions));
  const int first_page = start / page_size;
  const int page_count = (start + count - 1) / page_size - first_page + 1;
  for (int i = static_cast<int>(threadIdx.x); i < page_count; i += static_cast<int>(blockDim.x)) {
    pages[i] = block_table[n * shape.max_pages + first_page + i];
  }
  const int64_t head = n * shape.heads + static_cast<int64_t>(kv) * groups + group;
  for (int d = lane; d < kDim; d += 32) query[d] = to_float(q[head * kDim + d]) * scale;
  __syncthreads();
  // Stage the partition's rows: every thread moves 16-byte vectors of keys and values.
  const int64_t row_stride = shape.kv_heads * kDim;  // elements between consecutive slots
  for (int i = static_cast<int>(threadIdx.x); i < count * kVectorsPerRow;
       i += static_cast<int>(blockDim.x)) {
    const int t = i / kVectorsPerRow, c = i % kVectorsPerRow, j = start + t;
    const int64_t slot =
        static_cast<int64_t>(pages[j / page_size - first_page]) * page_size + j % page_size;
    const int64_t from = slot * row_stride + static_cast<int64_t>(kv) * kDim + c * kVector;
    const uint4 key = *reinterpret_cast<const uint4*>(k_pool + from);
    const uint4 value = *reinterpret_cast<const uint4*>(v_pool + from);
    *reinterpret_cast<uint4*>(keys + t * Layout::kKeyRow + c * kVector) = key;
    *reinterpret_cast<uint4*>(values + t * kDim + c * kVector) = value;
  }
  __syncthreads();

  // This warp's query head: a score per token (a lane per token), the softmax numerators, then
  // the weighted values (a lane per kPerLane elements).
  float top = -FLT_MAX;
  for (int t = lane; t < count; t += 32) {
    const float score = dot<T, kDim>(query, keys + t * Layout::kKeyRow);
    weights[t] = score;
    top = fmaxf(top, score);
  }
  top = warp_max(top);
  float sum = 0;
  for (int t = lane; t < count; t += 32) {
    const float weight = __expf(weights[t] - top);
    weights[t] = weight;
    sum += weight;
  }
  sum = warp_sum(sum);
  __syncwarp();
  float acc[kPerLane] = {};
  for (int t = 0; t < count; ++t) {
    const float weight = weights[t];
    const T* row = values + t * kDim + lane * kPerLane;
#pragma unroll
    for (int e = 0; e < kPerLane; ++e) acc[e] += weight * to_float(row[e]);
  }
  T* output = out + head * kDim + lane * kPerLane;
  if (used == 1) {
#pragma unroll
    for (int e = 0; e < kPerLane; ++e) output[e] = from_float<T>(acc[e] / sum);
    return;
  }
  // Several partitions: (kDim weighted sums, max, sum) per query head to the workspace; whoever
  // of the sequence's blocks finishes last merges them all.
  const int64_t stride = kDim + 2;
  float* parts = workspace + head * shape.partitions * stride;
  float* mine = parts + partition * stride;
#pragma unroll
  for (int e = 0; e < kPerLane; ++e) mine[lane * kPerLane + e] = acc[e];
  if (lane == 0) {
    mine[kDim] = top;
    mine[kDim + 1] = sum;
  }
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    int32_t* arrived = arrivals + n * shape.kv_heads + kv;
    merges = atomicAdd(arrived, 1) == used - 1;
    if (merges) *arrived = 0;  // ready for a later launch that reuses the counters
  }
  __syncthreads();
  if (!merges) return;
  __threadfence();
  float overall = -FLT_MAX;
  for (int p = lane; p < used; p += 32) overall = fmaxf(overall, __ldcg(parts + p * stride + kDim));
  overall = warp_max(overall);
  float total = 0;
  float merged[kPerLane] = {};
#pragma unroll 4
  for (int p = 0; p < used; ++p) {
    const float* part = parts + p * stride;
    const float weight = __expf(__ldcg(part + kDim) - overall);
    total += weight * __ldcg(part + kDim + 1);
#pragma unroll
    for (int e = 0; e < kPerLane; ++e) merged[e] += weight * __ldcg(part + lane * kPerLane + e);
  }
#pragma unroll
  for (int e = 0; e < kPerLane; ++e) output[e] = from_float<T>(merged[e] / total);
}

template <typename T, int kDim>
cudaError_t launch(const void* q, const void* k_pool, const void* v_pool,
                   const int32_t* block_table, const int32_t* lengths,
                   const PagedAttentionShape& shape, float scale, float* workspace,
                   int32_t* arrivals, void* out, cudaStream_t stream) {
  const int groups = static_cast<int>(shape.heads / shape.kv_heads);
  const size_t shared = SharedLayout<T, kDim>::bytes(groups);
  if (shared > 48 * 1024) {
    const cudaError_t status =
        cudaFuncSetAttribute(attention_kernel<T, kDim>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(shared));
    if (status != cudaSuccess) return status;
  }
  const dim3 grid(static_cast<unsigned>(shape.kv_heads), static_cast<unsigned>(shape.queries),
                  static_cast<unsigned>(shape.partitions));
  attention_kernel<T, kDim><<<grid, static_cast<unsigned>(groups * 32), shared, stream>>>(
      static_cast<const T*>(q), static_cast<const T*>(k_pool), static_cast<const T*>(v_pool),
      block_table, lengths, shape, scale, workspace, arrivals, static_cast<T*>(out));
  return cudaGetLastError();
}

template <typename T>
cudaError_t paged_decode_attention_as(const void* q, const void* k_pool, const void* v_pool,
                                      const int32_t* block_table, const int32_t* lengths,
                                      const PagedAttentionShape& shape, float scale,
                                      float* workspace, int32_t* arrivals, void* out,
                                      cudaStream_t stream) {
  if (shape.queries == 0) return cudaSuccess;
  if (!vector_aligned({k_pool, v_pool}, shape.dim, sizeof(T))) return cudaErrorMisalignedAddress;
  const auto with = [&](auto kernel) {
    return kernel(q, k_pool, v_pool, block_table, lengths, shape, scale, workspace, arrivals, out,
                  stream);
  };
  switch (shape.dim) {
    case 32:
      return with(launch<T, 32>);
    case 64:
      return with(launch<T, 64>);
    case 128:
      return with(launch<T, 128>);
    case 256:
      return with(launch<T, 256>);
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace

bool paged_attention_supports(int64_t dim) {
  return dim == 32 || dim == 64 || dim == 128 || dim == 256;
}

cudaError_t paged_decode_attention(const void* q, ElementType type, const void* k_pool,
                                   const void* v_pool, const int32_t* block_table,
                                   const int32_t* lengths, const PagedAttentionShape& shape,
                                   float scale, float* workspace, int32_t* arrivals, void* out,
                                   cudaStream_t stream) {
  if (shape.kv_heads <= 0 || shape.heads % shape.kv_heads != 0 ||
      shape.heads / shape.kv_heads > kMaxQueryGroups || !paged_attention_supports(shape.dim) ||
      shape.page_size <= 0 || shape.partitions <= 0 || shape.partitions > 65535 ||
      shape.queries > 65535) {
    return cudaErrorInvalidValue;
  }
  return with_element_type(type, [&](auto element) {
    return paged_decode_attention_as<decltype(element)>(
        q, k_pool, v_pool, block_table, lengths, shape, scale, workspace, arrivals, out, stream);
  });
}

}  // namespace kevin::train::kernels
