# problem: level2/12_Gemm_Multiply_LeakyReLU.py
# expect: rejected partial_fusion
# kernelbench: correct
# why: leaves the GEMM to F.linear (cuBLAS) and fuses only multiply+LeakyReLU: KernelBench's prompt allows it, kevin refuses the heavy op on the hot path
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

// y = leaky_relu(h * multiplier, slope), grid-stride.
__global__ void scale_leaky_relu_kernel(const float* __restrict__ h, float* __restrict__ y, int64_t n, float multiplier, float slope) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += stride) {
        const float v = h[i] * multiplier;
        y[i] = v > 0.0f ? v : v * slope;
    }
}

torch::Tensor scale_leaky_relu(torch::Tensor h, double multiplier, double slope) {
    TORCH_CHECK(h.is_cuda() && h.is_contiguous(), "contiguous CUDA tensor expected");
    auto y = torch::empty_like(h);
    const int64_t n = h.numel();
    const int blocks = (int)std::min<int64_t>((n + 255) / 256, 8192);
    scale_leaky_relu_kernel<<<blocks, 256, 0, at::cuda::getCurrentCUDAStream()>>>(h.data_ptr<float>(), y.data_ptr<float>(), n, (float)multiplier, (float)slope);
    return y;
}
"""

cpp_source = """
torch::Tensor scale_leaky_relu(torch::Tensor h, double multiplier, double slope);
"""

act_ext = load_inline(name="kb_agree_18_gemm_partial_fusion", cpp_sources=cpp_source, cuda_sources=cuda_source,
                      functions=["scale_leaky_relu"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.multiplier = multiplier
        self.negative_slope = negative_slope

    def forward(self, x):
        h = F.linear(x, self.gemm.weight, self.gemm.bias)
        return act_ext.scale_leaky_relu(h, self.multiplier, self.negative_slope)
