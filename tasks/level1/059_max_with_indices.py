# Row maximum together with its position: returns the tuple (values, indices) of
# torch.max(x, dim=-1) for a (ROWS, D) matrix; values float32, indices int64.
import torch
import torch.nn as nn

KEVIN_FAMILY = "reduction"

ROWS = 32768
D = 4100
KEVIN_CPU_SIZES = {"ROWS": 1024, "D": 1000}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        values, indices = torch.max(x, dim=-1)
        return values, indices


def get_inputs():
    return [torch.randn(ROWS, D) * (torch.rand(ROWS, 1) * 3 + 0.5)]


def get_init_inputs():
    return []
