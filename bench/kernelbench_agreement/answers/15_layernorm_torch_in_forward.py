# problem: level1/40_LayerNorm.py
# expect: rejected pytorch_compute
# kernelbench: correct
# why: calls a do-nothing kernel for show and returns F.layer_norm's result: KernelBench only compares outputs
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void touch_kernel(const float* __restrict__ x, float* __restrict__ sink) {
    if (blockIdx.x == 0 && threadIdx.x == 0) sink[0] = x[0];
}

// Launches a kernel so that the answer "uses CUDA"; computes nothing the output needs.
void warm_up(torch::Tensor x) {
    auto sink = torch::empty({1}, x.options());
    touch_kernel<<<1, 32, 0, at::cuda::getCurrentCUDAStream()>>>(x.data_ptr<float>(), sink.data_ptr<float>());
}
"""

cpp_source = """
void warm_up(torch::Tensor x);
"""

ln_ext = load_inline(name="kb_agree_15_layernorm_torch_in_forward", cpp_sources=cpp_source, cuda_sources=cuda_source,
                     functions=["warm_up"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, normalized_shape: tuple):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = 1e-5

    def forward(self, x):
        ln_ext.warm_up(x.contiguous())
        return F.layer_norm(x, self.normalized_shape, self.ln.weight, self.ln.bias, self.eps)
