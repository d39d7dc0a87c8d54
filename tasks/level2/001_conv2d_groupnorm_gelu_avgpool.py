# 3x3 convolution, then group normalisation, exact GELU, and 2x2 average pooling.
import torch
import torch.nn as nn
import torch.nn.functional as F

KEVIN_FAMILY = "conv2d"

BATCH = 64
IN_CH = 32
OUT_CH = 64
HEIGHT = 128
WIDTH = 128
KEVIN_CPU_SIZES = {"BATCH": 4, "IN_CH": 8, "OUT_CH": 16, "HEIGHT": 34, "WIDTH": 34}


class Model(nn.Module):
    def __init__(self, in_ch, out_ch, kernel_size, num_groups):
        super().__init__()
        self.conv = nn.Conv2d(in_ch, out_ch, kernel_size)
        self.norm = nn.GroupNorm(num_groups, out_ch)
        self.pool = nn.AvgPool2d(2)

    def forward(self, x):
        x = self.conv(x)
        x = self.norm(x)
        x = F.gelu(x)
        return self.pool(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CH, OUT_CH, 3, 8]
