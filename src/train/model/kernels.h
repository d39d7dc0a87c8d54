// kernels.h — launchers of the trainer's fused CUDA kernels (token_scores_kernels.cu,
// swiglu_kernels.cu, rotary_kernels.cu, paged_attention_kernels.cu, sampling/sampler_kernels.cu),
// called on CUDA tensors by token_scores.cpp, swiglu.cpp, rotary.cpp, paged_attention.cpp and
// sampling/generate.cpp. Plain CUDA and raw pointers, no libtorch types; each returns the
// launch's status.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace kevin::train::kernels {

enum class ElementType { kFloat32, kBFloat16, kFloat16 };

// Decode attention over a paged KV cache: each of `queries` rows of q (queries x heads x dim,
// contiguous) attends to the first lengths[n] (>= 1) keys of its sequence, whose token j lives
// at slot block_table[n * max_pages + j / page_size] * page_size + j % page_size of the pools
// (slots x kv_heads x dim, contiguous; query head h reads kv head h / (heads / kv_heads)).
// The keys are split into `partitions` partitions of kAttentionPartition tokens (enough for
// the longest sequence: keys past them are not read), each reduced by one block; a sequence
// with several writes them to the fp32 workspace (queries x heads x partitions x (dim + 2)
// floats) and the last of its blocks to finish merges them into out (queries x heads x dim,
// q's type), counting arrivals in `arrivals` (queries x kv_heads int32, zero before the launch
// and zero again after it, so launches in order may share them). heads / kv_heads must be at
// most kMaxQueryGroups, queries and partitions at most 65535 and paged_attention_supports(dim)
// hold; cudaErrorInvalidValue otherwise.
constexpr int64_t kMaxQueryGroups = 8;
constexpr int64_t kAttentionPartition = 64;
struct PagedAttentionShape {
  int64_t queries, heads, kv_heads, dim;
  int64_t page_size, max_pages, partitions;
};
// Head dimensions the kernel serves: 32, 64, 128 and 256.
bool paged_attention_supports(int64_t dim);
cudaError_t paged_decode_attention(const void* q, ElementType type, const void* k_pool,
                                   const void* v_pool, const int32_t* block_table,
                                   const int32_t* lengths, const PagedAttentionShape& shape,
                                   float scale, float* workspace, int32_t* arrivals, void* out,
                                   cudaStream_t stream);

// logits: rows x vocab, row-major, contiguous, of `type`. targets: rows int64 ids. Writes per
// row (fp32): logprobs = x[target]/T - lse, entropy of softmax(x/T), and lse = logsumexp(x/T)
// for the backward. A target outside [0, vocab) yields NaN.
cudaError_t token_scores_forward(const void* logits, ElementType type, const int64_t* targets,
                                 int64_t rows, int64_t vocab, float inv_temperature,
                                 float* logprobs, float* entropy, float* lse, cudaStream_t stream);

// grad_logits (same type and shape as logits) = grad[row] / T · (onehot(target) − softmax(x/T)),
// from the forward's lse. Overwrites grad_logits.
cudaError_t token_scores_backward(const void* logits, ElementType type, const int64_t* targets,
                                  const float* lse, const float* grad, int64_t rows, int64_t vocab,
                                  float inv_temperature, void* grad_logits, cudaStream_t stream);

// One token per row of logits (rows x vocab, row-major, contiguous, of `type`; rows <= 65535):
// the argmax of x · inv_temperature when `greedy`, else a draw from softmax(x · inv_temperature)
// restricted to its top-p nucleus (the tokens with less than top_p of the mass strictly above
// them; top_p >= 1 keeps all), seeded per row by seeds[rows] (any int64, null when `greedy`;
// the same seeds give the same tokens). Writes tokens[rows] (int64) and logprobs[rows] =
// x_token · inv_temperature − logsumexp(x · inv_temperature) (fp32, under the whole tempered
// distribution). workspace: sample_workspace_floats(rows, vocab) floats; arrivals: rows int32,
// zero before the launch and zero again after it. cudaErrorInvalidValue for sizes out of range
// or inv_temperature <= 0.
int64_t sample_workspace_floats(int64_t rows, int64_t vocab);
cudaError_t sample_rows(const void* logits, ElementType type, int64_t rows, int64_t vocab,
                        float inv_temperature, float top_p, bool greedy, const int64_t* seeds,
                        float* workspace, int32_t* arrivals, int64_t* tokens, float* logprobs,
                        cudaStream_t stream);

// gate_up: rows x 2·width, contiguous, gate in the first half of each row and up in the
// second. out: rows x width, silu(gate) · up.
cudaError_t swiglu_forward(const void* gate_up, ElementType type, int64_t rows, int64_t width,
                           void* out, cudaStream_t stream);

// From grad (rows x width) writes grad_gate_up (rows x 2·width, same layout as gate_up).
cudaError_t swiglu_backward(const void* gate_up, const void* grad, ElementType type, int64_t rows,
                            int64_t width, void* grad_gate_up, cudaStream_t stream);

// x: batch x seq x heads x dim with element strides (stride_b, stride_t, stride_h, 1); cos and
// sin: batch x seq x dim, fp32, contiguous; out: contiguous batch x seq x heads x dim.
// out = x·cos + rotate_half(x)·sin, rotate_half(x) = (−x[dim/2:], x[:dim/2]). With `inverse`
// it applies the transpose instead (the backward, reading x as the output's gradient).
struct RotaryShape {
  int64_t batch, seq, heads, dim;
  int64_t stride_b, stride_t, stride_h;
};
cudaError_t rotary(const void* x, ElementType type, const RotaryShape& shape, const float* cos,
                   const float* sin, bool inverse, void* out, cudaStream_t stream);

// A decode step's rotary and cache append in one pass. Row n (of `queries`) of q, k and v holds
// heads x dim, kv_heads x dim and kv_heads x dim elements, rows `q_row`, `k_row` and `v_row`
// elements apart (unit stride within a row: the three may be slices of one fused projection).
// Writes q rotated to q_out (queries x heads x dim, contiguous), and k rotated and v unchanged
// to slot slots[n] of k_pool and v_pool (slots x kv_heads x dim, contiguous). cos and sin:
// queries x dim, fp32, contiguous. Every tensor but cos, sin and slots is of `type`.
struct RotaryStoreShape {
  int64_t queries, heads, kv_heads, dim;
  int64_t q_row, k_row, v_row;
};
cudaError_t rotary_store(const void* q, const void* k, const void* v, ElementType type,
                         const RotaryStoreShape& shape, const float* cos, const float* sin,
                         const int64_t* slots, void* q_out, void* k_pool, void* v_pool,
                         cudaStream_t stream);

}  // namespace kevin::train::kernels
