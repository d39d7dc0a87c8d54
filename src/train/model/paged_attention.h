// paged_attention.h — decode attention over a paged KV cache: one new query per sequence
// reading its keys and values from token slots in shared pools through a block table (the
// paged generator's layout, sampling/kv_pool.h). A CUDA kernel where built, and a reference in
// stock ops that is both the CPU path and the kernel's test oracle.
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
};

// Attention of q [N, H, D] (query head h reads kv head h / (H / KV)) over each sequence's keys,
// scaled by 1/sqrt(D), no mask: every stored key is in the past. Returns [N, H, D] in q's
// dtype. The CUDA kernel when q is a CUDA tensor of the pools' dtype and the shape suits it
// (H / KV <= 8, D <= 256 and a multiple of 16 bytes), else the reference. Throws c10::Error
// on shape mismatches, as torch ops do.
torch::Tensor paged_decode_attention(const torch::Tensor& q, const PagedKeys& keys);

// The same in stock ops, softmax in fp32 (gathers every sequence's keys densely).
torch::Tensor paged_decode_attention_reference(const torch::Tensor& q, const PagedKeys& keys);

}  // namespace kevin::train
