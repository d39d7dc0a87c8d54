# Logistic sigmoid, elementwise: out = 1 / (1 + exp(-x)), on a (M, N) matrix of inputs
# with standard deviation 3.
import torch
import torch.nn as nn

KEVIN_FAMILY = "activation"

M = 16384
N = 6144
KEVIN_CPU_SIZES = {"M": 1000, "N": 1024}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.sigmoid(x)


def get_inputs():
    return [torch.randn(M, N) * 3.0]


def get_init_inputs():
    return []
