# 3x3 padded convolution, Softplus, subtraction of a constant, then clamping to
# [clamp_min, clamp_max].
import torch
import torch.nn as nn
import torch.nn.functional as F

KEVIN_FAMILY = "conv2d"

BATCH = 128
IN_CH = 16
OUT_CH = 32
HEIGHT = 112
WIDTH = 112
KEVIN_CPU_SIZES = {"BATCH": 4, "IN_CH": 6, "OUT_CH": 8, "HEIGHT": 32, "WIDTH": 32}


class Model(nn.Module):
    def __init__(self, in_ch, out_ch, kernel_size, shift, clamp_min, clamp_max):
        super().__init__()
        self.conv = nn.Conv2d(in_ch, out_ch, kernel_size, padding=1)
        self.shift = shift
        self.clamp_min = clamp_min
        self.clamp_max = clamp_max

    def forward(self, x):
        x = self.conv(x)
        x = F.softplus(x)
        x = x - self.shift
        return torch.clamp(x, self.clamp_min, self.clamp_max)


def get_inputs():
    return [torch.randn(BATCH, IN_CH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CH, OUT_CH, 3, 0.7, -0.3, 0.6]
