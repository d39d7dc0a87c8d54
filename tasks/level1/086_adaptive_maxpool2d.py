# Adaptive 2D max pooling to a fixed non-square 5x9 output (values only): output cell
# (i, j) takes the max over rows floor(i*H/5) .. ceil((i+1)*H/5)-1 and analogous columns.
import torch
import torch.nn as nn

KEVIN_FAMILY = "pooling"

BATCH = 64
C = 128
H = 100
W = 90
KEVIN_CPU_SIZES = {"BATCH": 4, "C": 24, "H": 40, "W": 37}


class Model(nn.Module):
    def __init__(self, out_size):
        super().__init__()
        self.pool = nn.AdaptiveMaxPool2d(out_size)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.randn(BATCH, C, H, W)]


def get_init_inputs():
    return [(5, 9)]
