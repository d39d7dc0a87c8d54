# Matrix product with a short inner dimension: C = A @ B with A (M, K), B (K, N)
# and K much smaller than M and N, so writing C dominates the cost.
import torch
import torch.nn as nn

KEVIN_FAMILY = "matmul"

M = 8192
N = 6144
K = 48
KEVIN_CPU_SIZES = {"M": 512, "N": 384, "K": 48}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.matmul(a, b)


def get_inputs():
    s = K ** -0.25
    return [torch.randn(M, K) * s, torch.randn(K, N) * s]


def get_init_inputs():
    return []
