# 2D average pooling with a 3x3 window, stride 2, padding 1; padded zeros are counted
# in the divisor (count_include_pad=True): (BATCH, C, H, W) -> (BATCH, C, ~H/2, ~W/2).
import torch
import torch.nn as nn

KEVIN_FAMILY = "pooling"

BATCH = 32
C = 64
H = 256
W = 192
KEVIN_CPU_SIZES = {"BATCH": 4, "C": 16, "H": 63, "W": 55}


class Model(nn.Module):
    def __init__(self, kernel_size, stride, padding):
        super().__init__()
        self.pool = nn.AvgPool2d(kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.randn(BATCH, C, H, W)]


def get_init_inputs():
    return [3, 2, 1]
