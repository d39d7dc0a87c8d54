# problem: level1/12_Matmul_with_diagonal_matrices_.py
# expect: correct
# kernelbench: correct
# why: honest grid-stride row scaling with float4 loads and stores (diag(A) @ B without the N x N matrix)
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

// C[i, j] = d[i] * B[i, j] for B (rows, cols), row-major; four columns per thread step.
__global__ void diag_scale_vec4(const float* __restrict__ d, const float4* __restrict__ b, float4* __restrict__ c,
                                int64_t rows, int64_t cols4) {
    const int64_t total = rows * cols4, stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += stride) {
        const float s = d[i / cols4];
        float4 v = b[i];
        v.x *= s;
        v.y *= s;
        v.z *= s;
        v.w *= s;
        c[i] = v;
    }
}

__global__ void diag_scale_scalar(const float* __restrict__ d, const float* __restrict__ b, float* __restrict__ c,
                                  int64_t rows, int64_t cols) {
    const int64_t total = rows * cols, stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += stride) c[i] = d[i / cols] * b[i];
}

static void launch_diag(const torch::Tensor& d, const torch::Tensor& b, torch::Tensor& c) {
    TORCH_CHECK(d.is_cuda() && b.is_cuda() && d.is_contiguous() && b.is_contiguous(), "contiguous CUDA tensors expected");
    TORCH_CHECK(d.dim() == 1 && b.dim() == 2 && d.size(0) == b.size(0), "A (N,) and B (N, M) expected");
    const int64_t rows = b.size(0), cols = b.size(1);
    const int threads = 256;
    auto stream = at::cuda::getCurrentCUDAStream();
    if (cols % 4 == 0) {
        const int64_t total = rows * (cols / 4);
        const int blocks = (int)std::min<int64_t>((total + threads - 1) / threads, 8192);
        diag_scale_vec4<<<blocks, threads, 0, stream>>>(d.data_ptr<float>(), reinterpret_cast<const float4*>(b.data_ptr<float>()),
                                                       reinterpret_cast<float4*>(c.data_ptr<float>()), rows, cols / 4);
    } else {
        const int blocks = (int)std::min<int64_t>((rows * cols + threads - 1) / threads, 8192);
        diag_scale_scalar<<<blocks, threads, 0, stream>>>(d.data_ptr<float>(), b.data_ptr<float>(), c.data_ptr<float>(), rows, cols);
    }
}

torch::Tensor diag_matmul(torch::Tensor d, torch::Tensor b) {
    auto c = torch::empty_like(b);
    launch_diag(d, b, c);
    return c;
}
"""

cpp_source = """
torch::Tensor diag_matmul(torch::Tensor d, torch::Tensor b);
"""

diag_ext = load_inline(name="kb_agree_06_diag_matmul", cpp_sources=cpp_source, cuda_sources=cuda_source,
                       functions=["diag_matmul"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return diag_ext.diag_matmul(A.contiguous(), B.contiguous())
