# Sum over the middle dimension of a (BATCH, D, N) tensor -> (BATCH, N).
# Each (batch, column) has its own offset so the sums are far from zero.
import torch
import torch.nn as nn

KEVIN_FAMILY = "reduction"

BATCH = 64
D = 2048
N = 1024
KEVIN_CPU_SIZES = {"BATCH": 8, "D": 512, "N": 257}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.sum(x, dim=1)


def get_inputs():
    offset = (torch.rand(BATCH, 1, N) + 0.5) * torch.sign(torch.randn(BATCH, 1, N))
    return [torch.randn(BATCH, D, N) + offset]


def get_init_inputs():
    return []
