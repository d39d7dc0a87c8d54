# problem: level2/76_Gemm_Add_ReLU.py
# expect: correct
# kernelbench: correct
# why: honest tiled GEMM (bias-free Linear) with the separate bias add and ReLU fused into the store
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

// x W^T + bias, then ReLU.
__device__ inline float epilogue(float v, int n, const float* bias, float p0, float p1) {
    return fmaxf(v + bias[n], 0.0f);
}

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

torch::Tensor linear_act_forward(torch::Tensor x, torch::Tensor w, torch::Tensor bias, double p0, double p1) {
    TORCH_CHECK(x.is_cuda() && w.is_cuda() && bias.is_cuda(), "CUDA tensors expected");
    TORCH_CHECK(x.dim() == 2 && w.dim() == 2 && x.size(1) == w.size(1), "x (M, K) and weight (N, K) expected");
    TORCH_CHECK(bias.is_contiguous() && bias.numel() == w.size(0), "bias of N elements expected");
    const int M = (int)x.size(0), K = (int)x.size(1), N = (int)w.size(0);
    auto y = torch::empty({M, N}, x.options());
    dim3 grid((N + TILE_N - 1) / TILE_N, (M + TILE_M - 1) / TILE_M);
    gemm_tiled<<<grid, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), w.data_ptr<float>(), y.data_ptr<float>(), bias.data_ptr<float>(), (float)p0, (float)p1,
        M, N, K, x.stride(0), x.stride(1), w.stride(1), w.stride(0));
    return y;
}
"""

cpp_source = """
torch::Tensor linear_act_forward(torch::Tensor x, torch::Tensor w, torch::Tensor bias, double p0, double p1);
"""

gemm_ext = load_inline(name="kb_agree_11_gemm_add_relu", cpp_sources=cpp_source, cuda_sources=cuda_source,
                       functions=["linear_act_forward"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, bias_shape):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features, bias=False)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        return gemm_ext.linear_act_forward(x, self.gemm.weight, self.bias, 0.0, 0.0)
