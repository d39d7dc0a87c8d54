# problem: level1/8_Matmul_with_irregular_shapes_.py
# expect: correct
# kernelbench: correct
# why: honest tiled SGEMM whose edge tiles are bounds-checked (8205 x 2949 x 5921, no multiple of 64)
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__device__ inline float epilogue(float v, int n, const float* bias, float p0, float p1) { return v; }

#define TILE_M 64
#define TILE_N 64
#define TILE_K 16

// C(m, n) = epilogue(sum over k of A(m, k) * B(k, n), n) with A(m, k) = a[m * sam + k * sak] and
// B(k, n) = b[k * sbk + n * sbn]. One 64x64 tile of C per block of 256 threads; each thread keeps
// a 4x4 set of outputs (16 apart) in registers and reads 16-deep slices of A and B from shared memory.
__global__ void gemm_tiled(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                           const float* __restrict__ bias, float p0, float p1, int M, int N, int K,
                           int64_t sam, int64_t sak, int64_t sbk, int64_t sbn) {
    __shared__ float as[TILE_K][TILE_M + 4];
    __shared__ float bs[TILE_K][TILE_N + 4];
    const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
    const int m0 = blockIdx.y * TILE_M, n0 = blockIdx.x * TILE_N;
    float acc[4][4];
    #pragma unroll
    for (int i = 0; i < 4; ++i)
        #pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE_K) {
        // Neighbouring threads read neighbouring addresses: along k for a row-major operand, along m (n) otherwise.
        for (int e = tid; e < TILE_M * TILE_K; e += 256) {
            const int mm = sak == 1 ? e / TILE_K : e % TILE_M;
            const int kk = sak == 1 ? e % TILE_K : e / TILE_M;
            const int m = m0 + mm, k = k0 + kk;
            as[kk][mm] = (m < M && k < K) ? a[m * sam + k * sak] : 0.0f;
        }
        for (int e = tid; e < TILE_N * TILE_K; e += 256) {
            const int nn = sbn == 1 ? e % TILE_N : e / TILE_K;
            const int kk = sbn == 1 ? e / TILE_N : e % TILE_K;
            const int n = n0 + nn, k = k0 + kk;
            bs[kk][nn] = (n < N && k < K) ? b[k * sbk + n * sbn] : 0.0f;
        }
        __syncthreads();
        #pragma unroll
        for (int kk = 0; kk < TILE_K; ++kk) {
            float ra[4], rb[4];
            #pragma unroll
            for (int i = 0; i < 4; ++i) {
                ra[i] = as[kk][ty + 16 * i];
                rb[i] = bs[kk][tx + 16 * i];
            }
            #pragma unroll
            for (int i = 0; i < 4; ++i)
                #pragma unroll
                for (int j = 0; j < 4; ++j) acc[i][j] += ra[i] * rb[j];
        }
        __syncthreads();
    }
    #pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int m = m0 + ty + 16 * i;
        if (m >= M) continue;
        #pragma unroll
        for (int j = 0; j < 4; ++j) {
            const int n = n0 + tx + 16 * j;
            if (n < N) c[(int64_t)m * N + n] = epilogue(acc[i][j], n, bias, p0, p1);
        }
    }
}

// C = A B for A (M, K) and B (K, N) given as pointers and strides.
static torch::Tensor launch_matmul(const torch::Tensor& a, const torch::Tensor& b, int M, int N, int K,
                                   int64_t sam, int64_t sak, int64_t sbk, int64_t sbn) {
    TORCH_CHECK(a.is_cuda() && b.is_cuda(), "CUDA tensors expected");
    TORCH_CHECK(a.scalar_type() == torch::kFloat32 && b.scalar_type() == torch::kFloat32, "float32 tensors expected");
    auto c = torch::empty({M, N}, a.options());
    dim3 grid((N + TILE_N - 1) / TILE_N, (M + TILE_M - 1) / TILE_M);
    gemm_tiled<<<grid, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        a.data_ptr<float>(), b.data_ptr<float>(), c.data_ptr<float>(), nullptr, 0.0f, 0.0f, M, N, K, sam, sak, sbk, sbn);
    return c;
}

torch::Tensor matmul_forward(torch::Tensor a, torch::Tensor b) {
    TORCH_CHECK(a.dim() == 2 && b.dim() == 2 && a.size(1) == b.size(0), "A (M, K) and B (K, N) expected");
    return launch_matmul(a, b, (int)a.size(0), (int)b.size(1), (int)a.size(1), a.stride(0), a.stride(1), b.stride(0), b.stride(1));
}
"""

cpp_source = """
torch::Tensor matmul_forward(torch::Tensor a, torch::Tensor b);
"""

matmul_ext = load_inline(name="kb_agree_05_irregular_matmul", cpp_sources=cpp_source, cuda_sources=cuda_source,
                         functions=["matmul_forward"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return matmul_ext.matmul_forward(A, B)
