# RMS normalisation over the last dimension, written out: each row is divided by
# sqrt(mean(x^2) + eps) and multiplied elementwise by a learned weight vector.
import torch
import torch.nn as nn

KEVIN_FAMILY = "norm"

BATCH = 16
S = 4096
D = 1536
KEVIN_CPU_SIZES = {"BATCH": 4, "S": 256, "D": 768}


class Model(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.25 * torch.randn(dim))

    def forward(self, x):
        inv_rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return x * inv_rms * self.weight


def get_inputs():
    scale = torch.rand(BATCH, S, 1) * 3 + 0.5
    return [torch.randn(BATCH, S, D) * scale]


def get_init_inputs():
    return [D, 1e-6]
