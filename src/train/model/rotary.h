// rotary.h — rotary position embeddings applied to queries or keys: x·cos + rotate_half(x)·sin
// per head. On CUDA one fused kernel each way (the stock path makes about five passes, some
// of them broadcasting over a transposed layout).
#pragma once

#include <torch/torch.h>

namespace kevin::train {

// x [B, T, H, D] (any strides, last dimension contiguous on the fused path), cos/sin
// [B, T, D] → [B, T, H, D] in x's dtype (arithmetic in fp32). Differentiable with respect to
// x only. CUDA tensors of a build with the kernels take the fused path, all others
// libtorch's ops; both agree to rounding.
torch::Tensor apply_rotary(const torch::Tensor& x, const torch::Tensor& cos,
                           const torch::Tensor& sin);

}  // namespace kevin::train
