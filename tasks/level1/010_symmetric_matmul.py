# Product of two symmetric N x N matrices: out = A @ B (the result itself is not symmetric).
# The inputs are symmetrised random matrices.
import torch
import torch.nn as nn

KEVIN_FAMILY = "matmul"

N = 4096
KEVIN_CPU_SIZES = {"N": 200}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.matmul(a, b)


def get_inputs():
    s = N ** -0.25 * 0.5 ** 0.5
    x = torch.randn(N, N)
    y = torch.randn(N, N)
    return [(x + x.t()) * s, (y + y.t()) * s]


def get_init_inputs():
    return []
