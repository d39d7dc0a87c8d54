// paged_attention.cpp — the reference in stock ops and the dispatch to the CUDA kernel.
#include "train/model/paged_attention.h"

#include <cmath>

#if KEVIN_TRAIN_CUDA_KERNELS
#include "train/model/kernel_launch.h"
#endif

namespace kevin::train {
namespace {

#if KEVIN_TRAIN_CUDA_KERNELS

bool takes_kernel(const torch::Tensor& q, const PagedKeys& keys) {
  const int64_t heads = q.size(1), kv_heads = keys.k_pool.size(1), dim = q.size(2);
  return q.is_cuda() && has_kernel_type(q) && q.scalar_type() == keys.k_pool.scalar_type() &&
         keys.v_pool.scalar_type() == q.scalar_type() && heads % kv_heads == 0 &&
         heads / kv_heads <= kernels::kMaxQueryGroups && kernels::paged_attention_supports(dim) &&
         keys.k_pool.is_contiguous() && keys.v_pool.is_contiguous() &&
         keys.block_table.scalar_type() == torch::kInt32 &&
         keys.lengths.scalar_type() == torch::kInt32;
}

torch::Tensor kernel_attention(const torch::Tensor& q, const PagedKeys& keys) {
  const auto query = q.contiguous();
  const auto table = keys.block_table.contiguous(), lengths = keys.lengths.contiguous();
  const int64_t n = q.size(0), heads = q.size(1), dim = q.size(2), kv_heads = keys.k_pool.size(1);
  const int64_t partitions = std::max<int64_t>(
      1, (keys.max_length + kernels::kAttentionPartition - 1) / kernels::kAttentionPartition);
  const kernels::PagedAttentionShape shape{
      n, heads, kv_heads, dim, keys.page_size, table.size(1), partitions};
  auto workspace =
      torch::empty({n * heads * partitions * (dim + 2)}, q.options().dtype(torch::kFloat32));
  auto arrivals = keys.arrivals.defined()
                      ? keys.arrivals
                      : torch::zeros({n * kv_heads}, q.options().dtype(torch::kInt32));
  TORCH_CHECK(arrivals.numel() >= n * kv_heads && arrivals.scalar_type() == torch::kInt32 &&
                  arrivals.is_contiguous() && arrivals.device() == q.device(),
              "paged_decode_attention: arrivals must be N x KV contiguous int32 on q's device");
  auto out = torch::empty_like(query);
  const OnDeviceOf on(q);
  check_launch(
      kernels::paged_decode_attention(
          query.data_ptr(), kernel_type(q), keys.k_pool.data_ptr(), keys.v_pool.data_ptr(),
          table.data_ptr<int32_t>(), lengths.data_ptr<int32_t>(), shape,
          static_cast<float>(1.0 / std::sqrt(static_cast<double>(dim))),
          workspace.data_ptr<float>(), arrivals.data_ptr<int32_t>(), out.data_ptr(), on.stream()),
      "paged decode attention");
  return out;
}

bool takes_store_kernel(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                        const torch::Tensor& cos, const torch::Tensor& sin,
                        const torch::Tensor& slots, const torch::Tensor& k_pool,
                        const torch::Tensor& v_pool) {
  const auto type = q.scalar_type();
  const auto device = q.device();
  for (const auto* t : {&k, &v, &cos, &sin, &slots, &k_pool, &v_pool}) {
    if (t->device() != device) return false;
  }
  for (const auto* t : {&k, &v, &k_pool, &v_pool}) {
    if (t->scalar_type() != type) return false;
  }
  return q.is_cuda() && has_kernel_type(q) && q.dim() == 2 && k.dim() == 2 && v.dim() == 2 &&
         q.stride(1) == 1 && k.stride(1) == 1 && v.stride(1) == 1 && k_pool.is_contiguous() &&
         v_pool.is_contiguous() && slots.scalar_type() == torch::kLong;
}

torch::Tensor kernel_rotary_store(const torch::Tensor& q, const torch::Tensor& k,
                                  const torch::Tensor& v, const torch::Tensor& cos,
                                  const torch::Tensor& sin, const torch::Tensor& slots,
                                  const torch::Tensor& k_pool, const torch::Tensor& v_pool) {
  const int64_t n = q.size(0), kv_heads = k_pool.size(1), dim = k_pool.size(2);
  const int64_t heads = q.size(1) / dim;
  const auto cos32 = cos.to(torch::kFloat32).contiguous(),
             sin32 = sin.to(torch::kFloat32).contiguous(), slot_ids = slots.contiguous();
  auto out = torch::empty({n, heads, dim}, q.options());
  const kernels::RotaryStoreShape shape{n,           heads,       kv_heads,   dim,
                                        q.stride(0), k.stride(0), v.stride(0)};
  const OnDeviceOf on(q);
  check_launch(kernels::rotary_store(q.data_ptr(), k.data_ptr(), v.data_ptr(), kernel_type(q),
                                     shape, cos32.data_ptr<float>(), sin32.data_ptr<float>(),
                                     slot_ids.data_ptr<int64_t>(), out.data_ptr(),
                                     k_pool.data_ptr(), v_pool.data_ptr(), on.stream()),
               "rotary store");
  return out;
}

#endif

void check_rotary_store_shapes(const torch::Tensor& q, const torch::Tensor& k,
                               const torch::Tensor& v, const torch::Tensor& cos,
                               const torch::Tensor& sin, const torch::Tensor& slots,
                               const torch::Tensor& k_pool, const torch::Tensor& v_pool) {
  TORCH_CHECK(k_pool.dim() == 3 && v_pool.sizes() == k_pool.sizes(),
              "rotary_store: pools must be [slots, kv_heads, dim] alike");
  const int64_t n = q.size(0), kv_width = k_pool.size(1) * k_pool.size(2), dim = k_pool.size(2);
  TORCH_CHECK(q.dim() == 2 && q.size(1) % dim == 0 && dim % 2 == 0,
              "rotary_store: q must be [N, heads * dim] with an even dim");
  TORCH_CHECK(k.dim() == 2 && v.dim() == 2 && k.size(0) == n && v.size(0) == n &&
                  k.size(1) == kv_width && v.size(1) == kv_width,
              "rotary_store: k and v must be [N, kv_heads * dim]");
  TORCH_CHECK(
      cos.dim() == 2 && cos.size(0) == n && cos.size(1) == dim && sin.sizes() == cos.sizes(),
      "rotary_store: cos and sin must be [N, dim]");
  TORCH_CHECK(slots.dim() == 1 && slots.size(0) == n, "rotary_store: slots must be [N]");
}

}  // namespace

torch::Tensor rotary_store_reference(const torch::Tensor& q, const torch::Tensor& k,
                                     const torch::Tensor& v, const torch::Tensor& cos,
                                     const torch::Tensor& sin, const torch::Tensor& slots,
                                     const torch::Tensor& k_pool, const torch::Tensor& v_pool) {
  check_rotary_store_shapes(q, k, v, cos, sin, slots, k_pool, v_pool);
  const int64_t n = q.size(0), kv_heads = k_pool.size(1), dim = k_pool.size(2);
  const int64_t half = dim / 2;
  const auto c = cos.to(torch::kFloat32).unsqueeze(1), s = sin.to(torch::kFloat32).unsqueeze(1);
  const auto rotated = [&](const torch::Tensor& x) {  // [N, heads, D] in fp32
    const auto x32 = x.to(torch::kFloat32);
    const auto turned = torch::cat({-x32.narrow(-1, half, half), x32.narrow(-1, 0, half)}, -1);
    return x32 * c + turned * s;
  };
  k_pool.index_copy_(0, slots, rotated(k.reshape({n, kv_heads, dim})).to(k_pool.scalar_type()));
  v_pool.index_copy_(0, slots, v.reshape({n, kv_heads, dim}).to(v_pool.scalar_type()));
  return rotated(q.reshape({n, -1, dim})).to(q.scalar_type()).contiguous();
}

torch::Tensor rotary_store(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                           const torch::Tensor& cos, const torch::Tensor& sin,
                           const torch::Tensor& slots, const torch::Tensor& k_pool,
                           const torch::Tensor& v_pool) {
#if KEVIN_TRAIN_CUDA_KERNELS
  if (takes_store_kernel(q, k, v, cos, sin, slots, k_pool, v_pool)) {
    check_rotary_store_shapes(q, k, v, cos, sin, slots, k_pool, v_pool);
    return kernel_rotary_store(q, k, v, cos, sin, slots, k_pool, v_pool);
  }
#endif
  return rotary_store_reference(q, k, v, cos, sin, slots, k_pool, v_pool);
}

torch::Tensor paged_decode_attention_reference(const torch::Tensor& q, const PagedKeys& keys) {
  const int64_t n = q.size(0), heads = q.size(1), dim = q.size(2);
  const int64_t kv_heads = keys.k_pool.size(1), groups = heads / kv_heads;
  TORCH_CHECK(heads % kv_heads == 0, "query heads must be a multiple of the key/value heads");
  const int64_t length = std::max<int64_t>(1, keys.max_length);
  const auto longs = torch::TensorOptions(q.device()).dtype(torch::kLong);
  const auto position = torch::arange(length, longs);  // [L]
  const auto table = keys.block_table.to(torch::kLong);
  const auto page_index =
      torch::div(position, keys.page_size, "floor").clamp_max(table.size(1) - 1);
  const auto slots = table.index_select(1, page_index) * keys.page_size +
                     (position % keys.page_size).view({1, length});  // [N, L]
  const auto beyond = (position.view({1, length}) >= keys.lengths.to(torch::kLong).view({n, 1}));
  // Slots past a sequence's length hold whatever was there (NaN included): zeroed, then masked.
  const auto gather = [&](const torch::Tensor& pool) {
    return pool.index_select(0, slots.reshape({-1}))
        .view({n, length, kv_heads, dim})
        .to(torch::kFloat32)
        .masked_fill(beyond.view({n, length, 1, 1}), 0.0);
  };
  const auto k = gather(keys.k_pool), v = gather(keys.v_pool);
  const auto query = q.to(torch::kFloat32).view({n, kv_heads, groups, dim});
  auto scores = torch::einsum("nkgd,nlkd->nkgl", {query, k}) / std::sqrt(static_cast<double>(dim));
  scores = scores.masked_fill(beyond.view({n, 1, 1, length}), -INFINITY);
  const auto weights = torch::softmax(scores, -1);
  return torch::einsum("nkgl,nlkd->nkgd", {weights, v})
      .reshape({n, heads, dim})
      .to(q.scalar_type());
}

torch::Tensor paged_decode_attention(const torch::Tensor& q, const PagedKeys& keys) {
#if KEVIN_TRAIN_CUDA_KERNELS
  if (takes_kernel(q, keys)) return kernel_attention(q, keys);
#endif
  return paged_decode_attention_reference(q, keys);
}

}  // namespace kevin::train
