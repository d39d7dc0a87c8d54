# problem: level1/40_LayerNorm.py
# expect: compile_error
# kernelbench: compile_fail
# why: the honest LayerNorm with one pre-Volta __shfl_down (no _sync): not declared when compiling for sm_70 and later
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__device__ inline float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down(v, o);
    return v;
}

__device__ inline double warp_sum_double(double v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}

// Pass 1: grid (slices, samples); each block sums one slice of one sample and its squares.
__global__ void ln_partial_sums(const float* __restrict__ x, double* __restrict__ partial, int64_t n, int slices) {
    __shared__ float ws[32], wq[32];
    const int sample = blockIdx.y, slice = blockIdx.x;
    const float* row = x + (int64_t)sample * n;
    const int64_t per = (n + slices - 1) / slices;
    const int64_t begin = slice * per, end = min(n, begin + per);
    float s = 0.0f, q = 0.0f;
    for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
        const float v = row[i];
        s += v;
        q += v * v;
    }
    s = warp_sum(s);
    q = warp_sum(q);
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0) {
        ws[warp] = s;
        wq[warp] = q;
    }
    __syncthreads();
    if (warp == 0) {
        const int warps = blockDim.x / 32;
        s = warp_sum(lane < warps ? ws[lane] : 0.0f);
        q = warp_sum(lane < warps ? wq[lane] : 0.0f);
        if (lane == 0) {
            partial[2 * ((int64_t)sample * slices + slice)] = s;
            partial[2 * ((int64_t)sample * slices + slice) + 1] = q;
        }
    }
}

// Pass 2: one warp per sample adds the slices in double: mean and 1 / sqrt(var + eps).
__global__ void ln_stats(const double* __restrict__ partial, float* __restrict__ stats, int64_t n, int slices, double eps) {
    const int sample = blockIdx.x;
    double s = 0.0, q = 0.0;
    for (int i = threadIdx.x; i < slices; i += 32) {
        s += partial[2 * ((int64_t)sample * slices + i)];
        q += partial[2 * ((int64_t)sample * slices + i) + 1];
    }
    s = warp_sum_double(s);
    q = warp_sum_double(q);
    if (threadIdx.x == 0) {
        const double mean = s / (double)n;
        const double var = fmax(q / (double)n - mean * mean, 0.0);
        stats[2 * sample] = (float)mean;
        stats[2 * sample + 1] = (float)(1.0 / sqrt(var + eps));
    }
}

// Pass 3: y = (x - mean) * rstd * weight + bias, four elements per step (n is a multiple of 4).
__global__ void ln_apply(const float4* __restrict__ x, const float4* __restrict__ w, const float4* __restrict__ b,
                         const float* __restrict__ stats, float4* __restrict__ y, int64_t n4, int64_t total4) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total4; i += stride) {
        const int64_t sample = i / n4, j = i % n4;
        const float mean = stats[2 * sample], rstd = stats[2 * sample + 1];
        const float4 v = x[i], g = w[j], h = b[j];
        float4 r;
        r.x = (v.x - mean) * rstd * g.x + h.x;
        r.y = (v.y - mean) * rstd * g.y + h.y;
        r.z = (v.z - mean) * rstd * g.z + h.z;
        r.w = (v.w - mean) * rstd * g.w + h.w;
        y[i] = r;
    }
}

torch::Tensor layer_norm_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, double eps) {
    TORCH_CHECK(x.is_cuda() && x.is_contiguous() && weight.is_contiguous() && bias.is_contiguous(), "contiguous CUDA tensors expected");
    const int64_t n = weight.numel();
    TORCH_CHECK(n % 4 == 0 && x.numel() % n == 0, "normalized size must divide the input and be a multiple of 4");
    const int64_t samples = x.numel() / n;
    const int slices = 256;
    auto stream = at::cuda::getCurrentCUDAStream();
    auto partial = torch::empty({samples * slices * 2}, x.options().dtype(torch::kFloat64));
    auto stats = torch::empty({samples * 2}, x.options());
    auto y = torch::empty_like(x);
    ln_partial_sums<<<dim3(slices, (unsigned)samples), 256, 0, stream>>>(x.data_ptr<float>(), partial.data_ptr<double>(), n, slices);
    ln_stats<<<(unsigned)samples, 32, 0, stream>>>(partial.data_ptr<double>(), stats.data_ptr<float>(), n, slices, eps);
    const int64_t total4 = x.numel() / 4;
    const int blocks = (int)std::min<int64_t>((total4 + 255) / 256, 8192);
    ln_apply<<<blocks, 256, 0, stream>>>(reinterpret_cast<const float4*>(x.data_ptr<float>()),
                                         reinterpret_cast<const float4*>(weight.data_ptr<float>()),
                                         reinterpret_cast<const float4*>(bias.data_ptr<float>()), stats.data_ptr<float>(),
                                         reinterpret_cast<float4*>(y.data_ptr<float>()), n / 4, total4);
    return y;
}
"""

cpp_source = """
torch::Tensor layer_norm_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, double eps);
"""

ln_ext = load_inline(name="kb_agree_29_layernorm_compile_error", cpp_sources=cpp_source, cuda_sources=cuda_source,
                     functions=["layer_norm_forward"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, normalized_shape: tuple):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)
        self.eps = 1e-5

    def forward(self, x):
        return ln_ext.layer_norm_forward(x.contiguous(), self.ln.weight, self.ln.bias, self.eps)
