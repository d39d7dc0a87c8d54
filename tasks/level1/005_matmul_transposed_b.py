# Matrix product with the right operand stored transposed: C = A @ B^T,
# where A is (M, K) and B is given as (N, K); C has shape (M, N).
import torch
import torch.nn as nn

KEVIN_FAMILY = "matmul"

M = 2048
K = 4096
N = 3072
KEVIN_CPU_SIZES = {"M": 128, "K": 256, "N": 192}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.matmul(a, b.t())


def get_inputs():
    s = K ** -0.25
    return [torch.randn(M, K) * s, torch.randn(N, K) * s]


def get_init_inputs():
    return []
