# Hardswish activation: out = x * clamp(x + 3, 0, 6) / 6, elementwise; inputs are wide
# enough that all three pieces (0, the quadratic ramp, identity) occur.
import torch
import torch.nn as nn
import torch.nn.functional as F

KEVIN_FAMILY = "activation"

M = 16384
N = 6144
KEVIN_CPU_SIZES = {"M": 1024, "N": 1024}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.hardswish(x)


def get_inputs():
    return [torch.randn(M, N) * 4.0]


def get_init_inputs():
    return []
