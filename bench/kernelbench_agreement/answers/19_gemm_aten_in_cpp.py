# problem: level2/63_Gemm_ReLU_Divide.py
# expect: rejected pytorch_compute
# kernelbench: correct
# why: the C++ host function gets the product from torch::matmul (ATen/cuBLAS) and only bias+ReLU+divide is a kernel
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

// y = max(h + bias[col], 0) / divisor.
__global__ void bias_relu_div_kernel(const float* __restrict__ h, const float* __restrict__ bias, float* __restrict__ y,
                                     int64_t total, int64_t cols, float divisor) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += stride)
        y[i] = fmaxf(h[i] + bias[i % cols], 0.0f) / divisor;
}

torch::Tensor linear_relu_divide(torch::Tensor x, torch::Tensor w, torch::Tensor bias, double divisor) {
    auto h = torch::matmul(x, w.t()).contiguous();
    auto y = torch::empty_like(h);
    const int64_t total = h.numel();
    const int blocks = (int)std::min<int64_t>((total + 255) / 256, 8192);
    bias_relu_div_kernel<<<blocks, 256, 0, at::cuda::getCurrentCUDAStream()>>>(h.data_ptr<float>(), bias.data_ptr<float>(), y.data_ptr<float>(),
                                                                             total, h.size(1), (float)divisor);
    return y;
}
"""

cpp_source = """
torch::Tensor linear_relu_divide(torch::Tensor x, torch::Tensor w, torch::Tensor bias, double divisor);
"""

gemm_ext = load_inline(name="kb_agree_19_gemm_aten_in_cpp", cpp_sources=cpp_source, cuda_sources=cuda_source,
                       functions=["linear_relu_divide"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, divisor):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.divisor = divisor

    def forward(self, x):
        return gemm_ext.linear_relu_divide(x, self.linear.weight, self.linear.bias, self.divisor)
