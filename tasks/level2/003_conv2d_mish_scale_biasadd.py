# 5x5 'same' convolution, Mish activation, multiplication by a constant factor,
# then addition of a learned per-channel bias.
import torch
import torch.nn as nn
import torch.nn.functional as F

KEVIN_FAMILY = "conv2d"

BATCH = 32
IN_CH = 48
OUT_CH = 96
HEIGHT = 112
WIDTH = 112
KEVIN_CPU_SIZES = {"BATCH": 4, "IN_CH": 6, "OUT_CH": 12, "HEIGHT": 32, "WIDTH": 32}


class Model(nn.Module):
    def __init__(self, in_ch, out_ch, kernel_size, scale):
        super().__init__()
        self.conv = nn.Conv2d(in_ch, out_ch, kernel_size, padding=kernel_size // 2)
        self.scale = scale
        self.bias = nn.Parameter(torch.randn(out_ch, 1, 1))

    def forward(self, x):
        x = self.conv(x)
        x = F.mish(x)
        x = x * self.scale
        return x + self.bias


def get_inputs():
    return [torch.randn(BATCH, IN_CH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CH, OUT_CH, 5, 1.5]
