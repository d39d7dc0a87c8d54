# Leaky ReLU: out = x for x >= 0 and negative_slope * x otherwise; the slope is
# a constructor argument.
import torch
import torch.nn as nn

KEVIN_FAMILY = "activation"

M = 12288
N = 8191
KEVIN_CPU_SIZES = {"M": 1201, "N": 1023}


class Model(nn.Module):
    def __init__(self, negative_slope):
        super().__init__()
        self.act = nn.LeakyReLU(negative_slope)

    def forward(self, x):
        return self.act(x)


def get_inputs():
    return [torch.randn(M, N)]


def get_init_inputs():
    return [0.05]
