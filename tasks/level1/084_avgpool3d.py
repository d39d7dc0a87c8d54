# 3D average pooling with a 3x3x3 window, stride 2, padding 1 (padding counted in the
# divisor) on volumes (BATCH, C, D, H, W).
import torch
import torch.nn as nn

KEVIN_FAMILY = "pooling"

BATCH = 8
C = 32
D = 64
H = 64
W = 96
KEVIN_CPU_SIZES = {"BATCH": 2, "C": 8, "D": 21, "H": 19, "W": 27}


class Model(nn.Module):
    def __init__(self, kernel_size, stride, padding):
        super().__init__()
        self.pool = nn.AvgPool3d(kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.randn(BATCH, C, D, H, W)]


def get_init_inputs():
    return [3, 2, 1]
