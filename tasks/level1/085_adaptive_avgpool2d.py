# Adaptive 2D average pooling to a fixed 7x7 output: output cell (i, j) averages input rows
# floor(i*H/7) .. ceil((i+1)*H/7)-1 and the analogous columns (windows may overlap).
import torch
import torch.nn as nn

KEVIN_FAMILY = "pooling"

BATCH = 64
C = 256
H = 60
W = 58
KEVIN_CPU_SIZES = {"BATCH": 4, "C": 32, "H": 30, "W": 29}


class Model(nn.Module):
    def __init__(self, out_size):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2d(out_size)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.randn(BATCH, C, H, W)]


def get_init_inputs():
    return [(7, 7)]
