# Log-softmax over the last dimension: out = x - max - log(sum(exp(x - max))) per row,
# for a (ROWS, D) matrix with odd D and large row offsets and scales.
import torch
import torch.nn as nn

KEVIN_FAMILY = "softmax"

ROWS = 8192
D = 8191
KEVIN_CPU_SIZES = {"ROWS": 257, "D": 2001}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.log_softmax(x, dim=-1)


def get_inputs():
    scale = torch.rand(ROWS, 1) * 24 + 0.5
    shift = torch.rand(ROWS, 1) * 120 - 60
    return [torch.randn(ROWS, D) * scale + shift]


def get_init_inputs():
    return []
