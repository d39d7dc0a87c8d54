# 2D convolution with a 3x3 kernel, stride 1, padding 1 and bias (nn.Conv2d):
# input (BATCH, CIN, H, W) -> output (BATCH, COUT, H, W).
import torch
import torch.nn as nn

KEVIN_FAMILY = "conv"

BATCH = 16
CIN = 64
COUT = 128
H = 128
W = 128
KEVIN_CPU_SIZES = {"BATCH": 4, "CIN": 16, "COUT": 32, "H": 40, "W": 36}


class Model(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, kernel_size=3, stride=1, padding=1)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, CIN, H, W)]


def get_init_inputs():
    return [CIN, COUT]
