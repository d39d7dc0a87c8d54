# Cumulative product along the middle dimension of a (BATCH, L, D) tensor with entries near
# one (1 + 0.1 * noise): out[b, i, d] = x[b, 0, d] * ... * x[b, i, d].
import torch
import torch.nn as nn

KEVIN_FAMILY = "scan"

BATCH = 64
L = 256
D = 6144
KEVIN_CPU_SIZES = {"BATCH": 4, "L": 128, "D": 512}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.cumprod(x, dim=1)


def get_inputs():
    return [1.0 + 0.1 * torch.randn(BATCH, L, D)]


def get_init_inputs():
    return []
