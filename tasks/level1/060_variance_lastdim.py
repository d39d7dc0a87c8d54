# Unbiased variance over the last dimension (divide by D - 1) of a (ROWS, D) matrix whose
# rows have different spreads and offsets -> (ROWS,).
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
        return torch.var(x, dim=-1, unbiased=True)


def get_inputs():
    scale = torch.rand(ROWS, 1) * 3 + 0.5
    shift = torch.randn(ROWS, 1) * 4
    return [torch.randn(ROWS, D) * scale + shift]


def get_init_inputs():
    return []
