# problem: level1/12_Matmul_with_diagonal_matrices_.py
# expect: runtime_error
# kernelbench: incorrect
# why: launches 2048 threads per block (the limit is 1024) and checks the launch: every call raises
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


torch::Tensor diag_matmul(torch::Tensor d, torch::Tensor b) {
    TORCH_CHECK(d.is_cuda() && b.is_contiguous() && b.size(1) % 4 == 0, "contiguous (N, M) with M % 4 == 0 expected");
    auto c = torch::empty_like(b);
    const int64_t rows = b.size(0), cols4 = b.size(1) / 4;
    const int threads = 2048;
    const int blocks = (int)std::min<int64_t>((rows * cols4 + threads - 1) / threads, 8192);
    diag_scale_vec4<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(d.data_ptr<float>(), reinterpret_cast<const float4*>(b.data_ptr<float>()),
                                                                             reinterpret_cast<float4*>(c.data_ptr<float>()), rows, cols4);
    const cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "diag_scale_vec4 launch failed: ", cudaGetErrorString(err));
    return c;
}
"""

cpp_source = """
torch::Tensor diag_matmul(torch::Tensor d, torch::Tensor b);
"""

diag_ext = load_inline(name="kb_agree_30_diag_launch_error", cpp_sources=cpp_source, cuda_sources=cuda_source,
                       functions=["diag_matmul"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return diag_ext.diag_matmul(A.contiguous(), B.contiguous())
