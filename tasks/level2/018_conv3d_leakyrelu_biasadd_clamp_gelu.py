# 3x3x3 volumetric convolution, LeakyReLU, addition of a learned per-channel bias,
# clamping to [clamp_min, clamp_max], then GELU.
import torch
import torch.nn as nn
import torch.nn.functional as F

KEVIN_FAMILY = "conv3d"

BATCH = 16
IN_CH = 8
OUT_CH = 32
DEPTH = 34
HEIGHT = 66
WIDTH = 66
KEVIN_CPU_SIZES = {"BATCH": 2, "IN_CH": 4, "OUT_CH": 8, "DEPTH": 10, "HEIGHT": 18, "WIDTH": 18}


class Model(nn.Module):
    def __init__(self, in_ch, out_ch, kernel_size, negative_slope, clamp_min, clamp_max):
        super().__init__()
        self.conv = nn.Conv3d(in_ch, out_ch, kernel_size)
        self.negative_slope = negative_slope
        self.bias = nn.Parameter(torch.randn(out_ch, 1, 1, 1) * 0.25)
        self.clamp_min = clamp_min
        self.clamp_max = clamp_max

    def forward(self, x):
        x = self.conv(x)
        x = F.leaky_relu(x, self.negative_slope)
        x = x + self.bias
        x = torch.clamp(x, self.clamp_min, self.clamp_max)
        return F.gelu(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CH, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CH, OUT_CH, 3, 0.2, -0.5, 0.8]
