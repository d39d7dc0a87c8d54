# 3x3 convolution, HardSwish, group normalisation, then multiplication by a
# run-time scalar passed to forward.
import torch
import torch.nn as nn
import torch.nn.functional as F

KEVIN_FAMILY = "conv2d"

BATCH = 32
IN_CH = 16
OUT_CH = 64
HEIGHT = 127
WIDTH = 127
KEVIN_CPU_SIZES = {"BATCH": 4, "IN_CH": 6, "OUT_CH": 16, "HEIGHT": 31, "WIDTH": 31}


class Model(nn.Module):
    def __init__(self, in_ch, out_ch, kernel_size, num_groups):
        super().__init__()
        self.conv = nn.Conv2d(in_ch, out_ch, kernel_size)
        self.norm = nn.GroupNorm(num_groups, out_ch)

    def forward(self, x, scale):
        x = self.conv(x)
        x = F.hardswish(x)
        x = self.norm(x)
        return x * scale


def get_inputs():
    return [torch.randn(BATCH, IN_CH, HEIGHT, WIDTH), 0.8]


def get_init_inputs():
    return [IN_CH, OUT_CH, 3, 4]
