# ReLU activation: out = max(x, 0), elementwise, on a (M, N) matrix of standard
# normal values (about half of the entries become zero).
import torch
import torch.nn as nn

KEVIN_FAMILY = "activation"

M = 16384
N = 6144
KEVIN_CPU_SIZES = {"M": 1024, "N": 1536}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(M, N)]


def get_init_inputs():
    return []
