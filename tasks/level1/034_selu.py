# SELU activation: scale * (max(0, x) + min(0, alpha * (exp(x) - 1))) with the fixed
# self-normalising constants, on a 4D tensor.
import torch
import torch.nn as nn
import torch.nn.functional as F

KEVIN_FAMILY = "activation"

B = 4
C = 48
H = 512
W = 1024
KEVIN_CPU_SIZES = {"B": 4, "C": 16, "H": 64, "W": 128}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.selu(x)


def get_inputs():
    return [torch.randn(B, C, H, W) * 1.5]


def get_init_inputs():
    return []
