# SiLU (swish) activation: out = x * sigmoid(x), elementwise, on a (M, N) matrix
# whose column count is odd.
import torch
import torch.nn as nn
import torch.nn.functional as F

KEVIN_FAMILY = "activation"

M = 16384
N = 6145
KEVIN_CPU_SIZES = {"M": 1001, "N": 1025}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.silu(x)


def get_inputs():
    return [torch.randn(M, N) * 2.0]


def get_init_inputs():
    return []
