# Mish activation: out = x * tanh(softplus(x)) = x * tanh(log(1 + exp(x))),
# elementwise on a (M, N) matrix.
import torch
import torch.nn as nn
import torch.nn.functional as F

KEVIN_FAMILY = "activation"

M = 8192
N = 12288
KEVIN_CPU_SIZES = {"M": 1024, "N": 1024}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.mish(x)


def get_inputs():
    return [torch.randn(M, N) * 2.0]


def get_init_inputs():
    return []
