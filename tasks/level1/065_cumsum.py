# Inclusive prefix sum along the last dimension of a (ROWS, L) matrix:
# out[i, j] = x[i, 0] + ... + x[i, j]. Rows drift up or down so sums leave zero.
import torch
import torch.nn as nn

KEVIN_FAMILY = "scan"

ROWS = 8192
L = 8192
KEVIN_CPU_SIZES = {"ROWS": 256, "L": 2000}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.cumsum(x, dim=-1)


def get_inputs():
    drift = (torch.rand(ROWS, 1) * 0.75 + 0.25) * torch.sign(torch.randn(ROWS, 1))
    return [torch.randn(ROWS, L) + drift]


def get_init_inputs():
    return []
