# Matrix product with the left operand stored transposed: C = A^T @ B,
# where A is given as a (K, M) matrix and B as (K, N); C has shape (M, N).
import torch
import torch.nn as nn

KEVIN_FAMILY = "matmul"

M = 4096
K = 3072
N = 2048
KEVIN_CPU_SIZES = {"M": 192, "K": 160, "N": 128}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.matmul(a.t(), b)


def get_inputs():
    s = K ** -0.25
    return [torch.randn(K, M) * s, torch.randn(K, N) * s]


def get_init_inputs():
    return []
