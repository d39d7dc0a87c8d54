# problem: level1/12_Matmul_with_diagonal_matrices_.py
# expect: wrong_answer
# kernelbench: incorrect
# why: one float4 per thread but the grid is sized for half of them: the second half of the output is whatever torch::empty held
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

// One float4 of C = diag(d) B per thread.
__global__ void diag_scale_once(const float* __restrict__ d, const float4* __restrict__ b, float4* __restrict__ c,
                                int64_t rows, int64_t cols4) {
    const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= rows * cols4) return;
    const float s = d[i / cols4];
    float4 v = b[i];
    v.x *= s;
    v.y *= s;
    v.z *= s;
    v.w *= s;
    c[i] = v;
}

torch::Tensor diag_matmul(torch::Tensor d, torch::Tensor b) {
    TORCH_CHECK(d.is_cuda() && b.is_contiguous() && b.size(1) % 4 == 0, "contiguous (N, M) with M % 4 == 0 expected");
    auto c = torch::empty_like(b);
    const int64_t rows = b.size(0), cols4 = b.size(1) / 4;
    const int64_t per_thread = 2;  // two float4s per thread
    const int blocks = (int)((rows * cols4 / per_thread + 255) / 256);
    diag_scale_once<<<blocks, 256, 0, at::cuda::getCurrentCUDAStream()>>>(d.data_ptr<float>(), reinterpret_cast<const float4*>(b.data_ptr<float>()),
                                                                         reinterpret_cast<float4*>(c.data_ptr<float>()), rows, cols4);
    return c;
}
"""

cpp_source = """
torch::Tensor diag_matmul(torch::Tensor d, torch::Tensor b);
"""

diag_ext = load_inline(name="kb_agree_26_diag_partial_fill", cpp_sources=cpp_source, cuda_sources=cuda_source,
                       functions=["diag_matmul"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return diag_ext.diag_matmul(A.contiguous(), B.contiguous())
