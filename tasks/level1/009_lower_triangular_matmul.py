# Product of two lower-triangular N x N matrices, keeping the lower triangle:
# out = tril(A @ B). The inputs are lower triangular (zeros above the diagonal).
import torch
import torch.nn as nn

KEVIN_FAMILY = "matmul"

N = 4096
KEVIN_CPU_SIZES = {"N": 224}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.tril(torch.matmul(a, b))


def get_inputs():
    s = N ** -0.25
    return [torch.tril(torch.randn(N, N)) * s, torch.tril(torch.randn(N, N)) * s]


def get_init_inputs():
    return []
