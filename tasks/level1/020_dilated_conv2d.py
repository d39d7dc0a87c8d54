# Dilated 2D convolution: 3x3 kernel with dilation 2 and padding 2 (so the spatial size is
# kept) and bias; input (BATCH, CIN, H, W) -> output (BATCH, COUT, H, W).
import torch
import torch.nn as nn

KEVIN_FAMILY = "conv"

BATCH = 16
CIN = 32
COUT = 64
H = 160
W = 160
KEVIN_CPU_SIZES = {"BATCH": 4, "CIN": 16, "COUT": 24, "H": 41, "W": 37}


class Model(nn.Module):
    def __init__(self, cin, cout, dilation):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, kernel_size=3, padding=dilation, dilation=dilation)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, CIN, H, W)]


def get_init_inputs():
    return [CIN, COUT, 2]
