// paged_attention.h — decode attention over a paged KV cache: one new query per sequence
// reading its keys and values from token slots in shared pools through a block table (the
// paged generator's layout, sampling/kv_pool.h), and the step's append of new keys and values.
// CUDA kernels where built, and references in stock ops that are both the CPU path and the
// kernels' test oracles.
#pragma once

#include <torch/torch.h>

namespace kevin::train {

// Where the keys of a batch of sequences live. Pools [slots, kv_heads, head_dim] (one layer's),
// token j of sequence n at slot block_table[n][j / page_size] * page_size + j % page_size;
// block_table [N, max_pages] int32 (unused entries any valid page), lengths [N] int32 (keys
// per sequence, >= 1), all on the pools' device. max_length >= every length (sizes the
// kernel's partitions without reading lengths back to the host).
struct PagedKeys {
  torch::Tensor k_pool, v_pool, block_table, lengths;
  int64_t page_size = 16;
  int64_t max_length = 0;
  // Optional, for the CUDA kernel: N × KV int32 zeros it counts in and leaves zero, so one
  // tensor serves every layer of a step (undefined: a fresh one per call, one more kernel).
  torch::Tensor arrivals;
};

// Attention of q [N, H, D] (query head h reads kv head h / (H / KV)) over each sequence's keys,
// scaled by 1/sqrt(D), no mask: every stored key is in the past. Returns [N, H, D] in q's
// dtype. The CUDA kernel when q is a CUDA tensor of the pools' dtype and the shape suits it
// (H / KV <= 8; D 32, 64, 128 or 256), else the reference. Throws c10::Error on shape mismatches,
// as torch ops do.
torch::Tensor paged_decode_attention(const torch::Tensor& q, const PagedKeys& keys);

// The same in stock ops, softmax in fp32 (gathers every sequence's keys densely).
torch::Tensor paged_decode_attention_reference(const torch::Tensor& q, const PagedKeys& keys);

// A decode step's rotary and cache append: q [N, H·D], k and v [N, KV·D] (unit stride in the
// last dimension: slices of one fused projection's output will do), cos and sin [N, D] (fp32)
// at each row's position. Writes k rotated and v into k_pool and v_pool [slots, KV, D] at
// slots [N] (int64) and returns q rotated, [N, H, D] contiguous. One CUDA kernel when every
// tensor is on one CUDA device and q, k, v and the pools share a kernel type; stock ops
// otherwise (the pools' dtype may then differ). Throws c10::Error on shape mismatches.
torch::Tensor rotary_store(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                           const torch::Tensor& cos, const torch::Tensor& sin,
                           const torch::Tensor& slots, const torch::Tensor& k_pool,
                           const torch::Tensor& v_pool);

// rotary_store in stock ops (the CPU path and the kernel's oracle).
torch::Tensor rotary_store_reference(const torch::Tensor& q, const torch::Tensor& k,
                                     const torch::Tensor& v, const torch::Tensor& cos,
                                     const torch::Tensor& sin, const torch::Tensor& slots,
                                     const torch::Tensor& k_pool, const torch::Tensor& v_pool);

}  // namespace kevin::train
