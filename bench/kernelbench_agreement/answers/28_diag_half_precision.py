# problem: level1/12_Matmul_with_diagonal_matrices_.py
# expect: rejected precision_downgrade
# kernelbench: incorrect
# why: casts A and B to fp16 to halve the traffic: the rounded inputs put errors near 5e-4, past the fp32 tolerance 1e-4
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

#include <cuda_fp16.h>

// C[i, j] = d[i] * B[i, j] from fp16 copies of d and B, written as float.
__global__ void diag_scale_half(const __half* __restrict__ d, const __half* __restrict__ b, float* __restrict__ c,
                                int64_t rows, int64_t cols) {
    const int64_t total = rows * cols, stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += stride)
        c[i] = __half2float(d[i / cols]) * __half2float(b[i]);
}

torch::Tensor diag_matmul_half(torch::Tensor d, torch::Tensor b) {
    TORCH_CHECK(d.is_contiguous() && b.is_contiguous() && b.scalar_type() == torch::kHalf, "contiguous fp16 tensors expected");
    auto c = torch::empty(b.sizes(), b.options().dtype(torch::kFloat32));
    const int64_t rows = b.size(0), cols = b.size(1);
    const int blocks = (int)std::min<int64_t>((rows * cols + 255) / 256, 8192);
    diag_scale_half<<<blocks, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        reinterpret_cast<const __half*>(d.data_ptr<at::Half>()), reinterpret_cast<const __half*>(b.data_ptr<at::Half>()),
        c.data_ptr<float>(), rows, cols);
    return c;
}
"""

cpp_source = """
torch::Tensor diag_matmul_half(torch::Tensor d, torch::Tensor b);
"""

diag_ext = load_inline(name="kb_agree_28_diag_half_precision", cpp_sources=cpp_source, cuda_sources=cuda_source,
                       functions=["diag_matmul_half"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return diag_ext.diag_matmul_half(A.contiguous().half(), B.contiguous().half())
