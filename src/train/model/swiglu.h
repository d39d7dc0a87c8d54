// swiglu.h — SwiGLU, silu(gate) · up, on the gate/up projections' concatenated output. On
// CUDA one fused kernel each way; the stock path stores silu(gate) and makes five passes.
#pragma once

#include <torch/torch.h>

namespace kevin::train {

// gate_up [..., 2·W] (gate first) → [..., W]. Differentiable. CUDA tensors of a build with the
// kernels (fp32, bf16, fp16) take the fused path, all others libtorch's ops; both agree to
// rounding.
torch::Tensor swiglu(const torch::Tensor& gate_up);

}  // namespace kevin::train
