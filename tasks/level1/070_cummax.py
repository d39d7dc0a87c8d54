# Running maximum along the last dimension (values only):
# out[i, j] = max(x[i, 0], ..., x[i, j]) for a (ROWS, L) matrix.
import torch
import torch.nn as nn

KEVIN_FAMILY = "scan"

ROWS = 16384
L = 6000
KEVIN_CPU_SIZES = {"ROWS": 400, "L": 1500}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.cummax(x, dim=-1).values


def get_inputs():
    return [torch.randn(ROWS, L) * (torch.rand(ROWS, 1) * 3 + 0.5)]


def get_init_inputs():
    return []
