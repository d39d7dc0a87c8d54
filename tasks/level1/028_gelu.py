# GELU activation with the exact error-function form:
# out = 0.5 * x * (1 + erf(x / sqrt(2))).
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
        return F.gelu(x)


def get_inputs():
    return [torch.randn(M, N) * 1.5]


def get_init_inputs():
    return []
