# Depthwise 2D convolution: each of the C channels is convolved with its own 3x3 filter
# (groups = C, padding 1, bias). Input and output have shape (BATCH, C, H, W).
import torch
import torch.nn as nn

KEVIN_FAMILY = "conv"

BATCH = 16
C = 128
H = 128
W = 128
KEVIN_CPU_SIZES = {"BATCH": 4, "C": 32, "H": 48, "W": 40}


class Model(nn.Module):
    def __init__(self, channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, kernel_size, padding=kernel_size // 2,
                              groups=channels)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, C, H, W)]


def get_init_inputs():
    return [C, 3]
