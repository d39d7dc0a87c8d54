# Transposed 4x4 convolution (stride 2, padding 1), HardSwish, softmax across the
# channels at every pixel, then multiplication by a constant.
import torch
import torch.nn as nn
import torch.nn.functional as F

KEVIN_FAMILY = "conv_transpose2d"

BATCH = 32
IN_CH = 64
OUT_CH = 16
HEIGHT = 64
WIDTH = 64
KEVIN_CPU_SIZES = {"BATCH": 4, "IN_CH": 16, "OUT_CH": 8, "HEIGHT": 16, "WIDTH": 16}


class Model(nn.Module):
    def __init__(self, in_ch, out_ch, kernel_size, stride, scale):
        super().__init__()
        self.deconv = nn.ConvTranspose2d(in_ch, out_ch, kernel_size, stride=stride, padding=1)
        self.scale = scale

    def forward(self, x):
        x = self.deconv(x)
        x = F.hardswish(x)
        x = torch.softmax(x, dim=1)
        return x * self.scale


def get_inputs():
    return [torch.randn(BATCH, IN_CH, HEIGHT, WIDTH) * 3.0]


def get_init_inputs():
    return [IN_CH, OUT_CH, 4, 2, 16.0]
