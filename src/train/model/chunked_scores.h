// chunked_scores.h — the LM head and token scores together, a block of rows at a time: the
// [tokens x vocab] logits of a training step (about 10 GiB per 16k-token sequence at 32B, and
// as much again for their gradient) never exist whole; backward recomputes each block's logits.
#pragma once

#include <torch/torch.h>

#include "train/model/token_scores.h"

namespace kevin::train {

// Scores of `targets` [K] (int64 ids in [0, V)) under softmax((hidden · head_weightᵀ) /
// temperature), with hidden [K, H] and head_weight [V, H] (the head has no bias): the values
// of score_tokens(lm_logits(hidden), targets, temperature), computed `chunk_rows` rows at a
// time (chunk_rows < 1: all rows in one chunk). Forward keeps hidden, head_weight and one
// log-sum-exp per row; backward recomputes each chunk's logits, so at most one chunk's logits
// [chunk_rows, V] and their gradient exist at once. Gradients flow to hidden and, when it
// requires grad, to head_weight (accumulated over chunks in fp32, or fp64), in their own dtypes.
//
// The matmuls run in CUDA autocast's dtype when it is on for a CUDA `hidden` that is not fp64,
// as lm_logits would under autocast (the trainer's fp32 hidden states give bf16 logits), else in
// hidden's dtype; head_weight is cast to it once per call. Forward and backward run with
// autocast off and that same dtype, so the recomputed logits equal the forward's bit for bit.
// The softmax runs on the fused kernels for CUDA fp32/bf16/fp16 logits of a build with them,
// else in fp32 (fp64 for fp64 logits). logprobs and entropy are fp32 [K]; entropy has no
// gradient. temperature <= 0 counts as 1. K = 0 gives empty scores and zero gradients.
// Throws c10::Error when the shapes or devices do not fit together.
TokenScores chunked_token_scores(const torch::Tensor& hidden, const torch::Tensor& head_weight,
                                 const torch::Tensor& targets, double temperature,
                                 int64_t chunk_rows = 2048);

}  // namespace kevin::train
