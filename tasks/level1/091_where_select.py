# Elementwise selection: out = where(x > y, x * y, x - y) for two tensors of the same
# shape (BATCH, S, D).
import torch
import torch.nn as nn

KEVIN_FAMILY = "elementwise"

BATCH = 64
S = 1024
D = 1200
KEVIN_CPU_SIZES = {"BATCH": 4, "S": 256, "D": 600}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        return torch.where(x > y, x * y, x - y)


def get_inputs():
    return [torch.randn(BATCH, S, D), torch.randn(BATCH, S, D)]


def get_init_inputs():
    return []
