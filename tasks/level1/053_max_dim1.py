# Maximum over the middle dimension of a (BATCH, D, N) tensor -> (BATCH, N), values only;
# each (batch, column) slice has its own spread.
import torch
import torch.nn as nn

KEVIN_FAMILY = "reduction"

BATCH = 32
D = 4096
N = 1024
KEVIN_CPU_SIZES = {"BATCH": 8, "D": 512, "N": 256}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.amax(x, dim=1)


def get_inputs():
    return [torch.randn(BATCH, D, N) * (torch.rand(BATCH, 1, N) * 3 + 0.5)]


def get_init_inputs():
    return []
