# Reverse (suffix) cumulative sum along the last dimension:
# out[i, j] = x[i, j] + x[i, j+1] + ... + x[i, L-1].
import torch
import torch.nn as nn

KEVIN_FAMILY = "scan"

ROWS = 16384
L = 4096
KEVIN_CPU_SIZES = {"ROWS": 512, "L": 1000}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.flip(torch.cumsum(torch.flip(x, dims=[-1]), dim=-1), dims=[-1])


def get_inputs():
    drift = (torch.rand(ROWS, 1) * 0.75 + 0.25) * torch.sign(torch.randn(ROWS, 1))
    return [torch.randn(ROWS, L) + drift]


def get_init_inputs():
    return []
