# 3x3 convolution, GELU, global average pooling over the spatial dimensions
# (output N x C x 1 x 1), then addition of a learned per-channel bias.
# Input channels carry per-sample scales so the pooled statistics vary.
import torch
import torch.nn as nn
import torch.nn.functional as F

KEVIN_FAMILY = "conv2d"

BATCH = 64
IN_CH = 64
OUT_CH = 128
HEIGHT = 64
WIDTH = 64
KEVIN_CPU_SIZES = {"BATCH": 4, "IN_CH": 8, "OUT_CH": 16, "HEIGHT": 24, "WIDTH": 24}


class Model(nn.Module):
    def __init__(self, in_ch, out_ch, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_ch, out_ch, kernel_size)
        self.bias = nn.Parameter(torch.randn(out_ch, 1, 1))

    def forward(self, x):
        x = self.conv(x)
        x = F.gelu(x)
        x = torch.mean(x, dim=(2, 3), keepdim=True)
        return x + self.bias


def get_inputs():
    scale = torch.rand(BATCH, IN_CH, 1, 1) * 2.5 + 0.25
    return [torch.randn(BATCH, IN_CH, HEIGHT, WIDTH) * scale]


def get_init_inputs():
    return [IN_CH, OUT_CH, 3]
