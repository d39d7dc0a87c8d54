# Hardtanh: clamp every element into [min_val, max_val] (an asymmetric range given
# as constructor arguments).
import torch
import torch.nn as nn

KEVIN_FAMILY = "activation"

M = 10000
N = 10000
KEVIN_CPU_SIZES = {"M": 1000, "N": 1000}


class Model(nn.Module):
    def __init__(self, min_val, max_val):
        super().__init__()
        self.act = nn.Hardtanh(min_val, max_val)

    def forward(self, x):
        return self.act(x)


def get_inputs():
    return [torch.randn(M, N) * 2.0]


def get_init_inputs():
    return [-1.25, 0.75]
