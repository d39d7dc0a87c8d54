# Linear combination with python scalars: out = alpha * x + beta * y, where alpha and
# beta are python floats passed to forward at call time.
import torch
import torch.nn as nn

KEVIN_FAMILY = "elementwise"

M = 16384
N = 6000
KEVIN_CPU_SIZES = {"M": 1024, "N": 1000}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y, alpha, beta):
        return alpha * x + beta * y


def get_inputs():
    return [torch.randn(M, N), torch.randn(M, N), 0.6, -1.3]


def get_init_inputs():
    return []
