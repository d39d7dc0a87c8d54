# Hyperbolic tangent, elementwise.
import torch
import torch.nn as nn

KEVIN_FAMILY = "activation"

M = 8192
N = 12288
KEVIN_CPU_SIZES = {"M": 256, "N": 384}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.tanh(x)


def get_inputs():
    return [torch.randn(M, N) * 2.0]


def get_init_inputs():
    return []
