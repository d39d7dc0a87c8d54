# Pointwise (1x1) 2D convolution with bias: every pixel's CIN-vector is mapped to a
# COUT-vector by the same matrix. Input (BATCH, CIN, H, W) -> output (BATCH, COUT, H, W).
import torch
import torch.nn as nn

KEVIN_FAMILY = "conv"

BATCH = 16
CIN = 256
COUT = 192
H = 64
W = 64
KEVIN_CPU_SIZES = {"BATCH": 4, "CIN": 96, "COUT": 64, "H": 25, "W": 23}


class Model(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, kernel_size=1)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, CIN, H, W)]


def get_init_inputs():
    return [CIN, COUT]
