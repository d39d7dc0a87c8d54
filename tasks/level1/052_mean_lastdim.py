# Mean over the last dimension of a (ROWS, D) matrix -> (ROWS,).
# Rows have different offsets and spreads.
import torch
import torch.nn as nn

KEVIN_FAMILY = "reduction"

ROWS = 32768
D = 4096
KEVIN_CPU_SIZES = {"ROWS": 1024, "D": 1000}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.mean(x, dim=-1)


def get_inputs():
    offset = torch.randn(ROWS, 1) * 2
    return [torch.randn(ROWS, D) * (torch.rand(ROWS, 1) * 3 + 0.5) + offset]


def get_init_inputs():
    return []
