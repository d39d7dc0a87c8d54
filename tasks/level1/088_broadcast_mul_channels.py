# Per-channel scaling of a 4D tensor: out[b, c, h, w] = x[b, c, h, w] * scale[c, 0, 0]
# with x of shape (BATCH, C, H, W) and scale of shape (C, 1, 1).
import torch
import torch.nn as nn

KEVIN_FAMILY = "elementwise"

BATCH = 32
C = 96
H = 160
W = 200
KEVIN_CPU_SIZES = {"BATCH": 4, "C": 24, "H": 64, "W": 100}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, scale):
        return x * scale


def get_inputs():
    return [torch.randn(BATCH, C, H, W), torch.randn(C, 1, 1)]


def get_init_inputs():
    return []
