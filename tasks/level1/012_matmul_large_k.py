# Matrix product with a very long inner dimension: C = A @ B with A (M, K), B (K, N),
# K much larger than M and N (small output, long dot products).
import torch
import torch.nn as nn

KEVIN_FAMILY = "matmul"

M = 256
N = 320
K = 196608
KEVIN_CPU_SIZES = {"M": 32, "N": 40, "K": 8192}


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
