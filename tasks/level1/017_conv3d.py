# 3D convolution with a 3x3x3 kernel, no padding, stride 1 and bias (nn.Conv3d):
# input (BATCH, CIN, D, H, W) -> output (BATCH, COUT, D-2, H-2, W-2).
import torch
import torch.nn as nn

KEVIN_FAMILY = "conv"

BATCH = 8
CIN = 16
COUT = 32
D = 32
H = 64
W = 64
KEVIN_CPU_SIZES = {"BATCH": 2, "CIN": 8, "COUT": 12, "D": 12, "H": 18, "W": 20}


class Model(nn.Module):
    def __init__(self, cin, cout, kernel_size):
        super().__init__()
        self.conv = nn.Conv3d(cin, cout, kernel_size)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, CIN, D, H, W)]


def get_init_inputs():
    return [CIN, COUT, 3]
