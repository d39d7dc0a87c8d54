# Scaled matrix product: out = alpha * (A @ B), where alpha is a python float
# passed to forward at call time; A is (M, K) and B is (K, N).
import torch
import torch.nn as nn

KEVIN_FAMILY = "matmul"

M = 3072
K = 2560
N = 3584
KEVIN_CPU_SIZES = {"M": 160, "K": 144, "N": 192}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b, alpha):
        return alpha * torch.matmul(a, b)


def get_inputs():
    s = K ** -0.25
    return [torch.randn(M, K) * s, torch.randn(K, N) * s, 1.75]


def get_init_inputs():
    return []
