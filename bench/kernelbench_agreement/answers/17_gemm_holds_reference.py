# problem: level2/76_Gemm_Add_ReLU.py
# expect: rejected calls_reference
# kernelbench: correct
# why: builds the reference Model inside ModelNew (same seed, same weights) and uses its nn.Linear for the GEMM; only bias+ReLU is a kernel
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

// y = max(h + bias[col], 0) for a contiguous (rows, cols) h.
__global__ void add_bias_relu_kernel(const float* __restrict__ h, const float* __restrict__ bias, float* __restrict__ y,
                                     int64_t total, int64_t cols) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += stride) y[i] = fmaxf(h[i] + bias[i % cols], 0.0f);
}

torch::Tensor add_bias_relu(torch::Tensor h, torch::Tensor bias) {
    TORCH_CHECK(h.is_cuda() && h.is_contiguous() && bias.is_contiguous() && h.dim() == 2 && bias.numel() == h.size(1), "bad arguments");
    auto y = torch::empty_like(h);
    const int64_t total = h.numel();
    const int blocks = (int)std::min<int64_t>((total + 255) / 256, 8192);
    add_bias_relu_kernel<<<blocks, 256, 0, at::cuda::getCurrentCUDAStream()>>>(h.data_ptr<float>(), bias.data_ptr<float>(), y.data_ptr<float>(), total, h.size(1));
    return y;
}
"""

cpp_source = """
torch::Tensor add_bias_relu(torch::Tensor h, torch::Tensor bias);
"""

bias_ext = load_inline(name="kb_agree_17_gemm_holds_reference", cpp_sources=cpp_source, cuda_sources=cuda_source,
                       functions=["add_bias_relu"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, bias_shape):
        super().__init__()
        self.reference = Model(in_features, out_features, bias_shape)

    def forward(self, x):
        h = self.reference.gemm(x)
        return bias_ext.add_bias_relu(h.contiguous(), self.reference.bias)
