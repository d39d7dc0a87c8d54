# problem: level2/99_Matmul_GELU_Softmax.py
# expect: wrong_answer
# kernelbench: incorrect
# why: GEMM and GELU are right but the softmax normalises each column (dim 0) instead of each row (dim 1)
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

// Linear bias, then exact (erf) GELU as F.gelu computes it.
__device__ inline float epilogue(float v, int n, const float* bias, float p0, float p1) {
    v += bias[n];
    return 0.5f * v * (1.0f + erff(v * 0.7071067811865476f));
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

// Softmax down each column of a contiguous (rows, cols) tensor, one thread per column.
__global__ void softmax_columns(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols) return;
    float m = -INFINITY;
    for (int r = 0; r < rows; ++r) m = fmaxf(m, x[(int64_t)r * cols + c]);
    float s = 0.0f;
    for (int r = 0; r < rows; ++r) s += expf(x[(int64_t)r * cols + c] - m);
    const float inv = 1.0f / s;
    for (int r = 0; r < rows; ++r) y[(int64_t)r * cols + c] = expf(x[(int64_t)r * cols + c] - m) * inv;
}

torch::Tensor linear_gelu_softmax(torch::Tensor x, torch::Tensor w, torch::Tensor bias) {
    auto h = linear_act_forward(x, w, bias, 0.0, 0.0);
    auto y = torch::empty_like(h);
    const int rows = (int)h.size(0), cols = (int)h.size(1);
    softmax_columns<<<(cols + 255) / 256, 256, 0, at::cuda::getCurrentCUDAStream()>>>(h.data_ptr<float>(), y.data_ptr<float>(), rows, cols);
    return y;
}
"""

cpp_source = """
torch::Tensor linear_gelu_softmax(torch::Tensor x, torch::Tensor w, torch::Tensor bias);
"""

gemm_ext = load_inline(name="kb_agree_27_softmax_wrong_axis", cpp_sources=cpp_source, cuda_sources=cuda_source,
                       functions=["linear_gelu_softmax"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return gemm_ext.linear_gelu_softmax(x, self.linear.weight, self.linear.bias)
