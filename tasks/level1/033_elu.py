# ELU activation: out = x for x > 0 and alpha * (exp(x) - 1) otherwise; alpha is a
# constructor argument.
import torch
import torch.nn as nn

KEVIN_FAMILY = "activation"

M = 16384
N = 6144
KEVIN_CPU_SIZES = {"M": 1024, "N": 1000}


class Model(nn.Module):
    def __init__(self, alpha):
        super().__init__()
        self.act = nn.ELU(alpha=alpha)

    def forward(self, x):
        return self.act(x)


def get_inputs():
    return [torch.randn(M, N) * 1.5]


def get_init_inputs():
    return [0.7]
