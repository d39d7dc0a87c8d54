# Index of the maximum along the middle dimension of a (BATCH, D, N) tensor
# -> int64 tensor (BATCH, N); ties resolve to the first occurrence.
import torch
import torch.nn as nn

KEVIN_FAMILY = "reduction"

BATCH = 64
D = 2048
N = 1024
KEVIN_CPU_SIZES = {"BATCH": 8, "D": 512, "N": 256}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.argmax(x, dim=1)


def get_inputs():
    return [torch.randn(BATCH, D, N)]


def get_init_inputs():
    return []
