# Square matrix product: C = A @ B for two N x N float32 matrices.
# Both inputs are scaled by N**-0.25 so that entries of C are of order one.
import torch
import torch.nn as nn

KEVIN_FAMILY = "matmul"

N = 4096
KEVIN_CPU_SIZES = {"N": 192}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.matmul(a, b)


def get_inputs():
    s = N ** -0.25
    return [torch.randn(N, N) * s, torch.randn(N, N) * s]


def get_init_inputs():
    return []
