# Transposed 4x4 convolution (stride 2, padding 1), Mish, 2x2 average pooling, then
# clamping to [clamp_min, clamp_max].
import torch
import torch.nn as nn
import torch.nn.functional as F

KEVIN_FAMILY = "conv_transpose2d"

BATCH = 64
IN_CH = 64
OUT_CH = 32
HEIGHT = 64
WIDTH = 64
KEVIN_CPU_SIZES = {"BATCH": 4, "IN_CH": 16, "OUT_CH": 8, "HEIGHT": 16, "WIDTH": 16}


class Model(nn.Module):
    def __init__(self, in_ch, out_ch, kernel_size, stride, clamp_min, clamp_max):
        super().__init__()
        self.deconv = nn.ConvTranspose2d(in_ch, out_ch, kernel_size, stride=stride, padding=1)
        self.pool = nn.AvgPool2d(2)
        self.clamp_min = clamp_min
        self.clamp_max = clamp_max

    def forward(self, x):
        x = self.deconv(x)
        x = F.mish(x)
        x = self.pool(x)
        return torch.clamp(x, self.clamp_min, self.clamp_max)


def get_inputs():
    return [torch.randn(BATCH, IN_CH, HEIGHT, WIDTH) * 2.0]


def get_init_inputs():
    return [IN_CH, OUT_CH, 4, 2, -0.2, 0.6]
