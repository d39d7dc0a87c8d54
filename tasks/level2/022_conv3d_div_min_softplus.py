# 3x3x3 volumetric convolution, division by a constant, minimum over the channel
# dimension (removed), then Softplus.
import torch
import torch.nn as nn
import torch.nn.functional as F

KEVIN_FAMILY = "conv3d"

BATCH = 16
IN_CH = 16
OUT_CH = 24
DEPTH = 32
HEIGHT = 64
WIDTH = 64
KEVIN_CPU_SIZES = {"BATCH": 2, "IN_CH": 4, "OUT_CH": 8, "DEPTH": 8, "HEIGHT": 16, "WIDTH": 16}


class Model(nn.Module):
    def __init__(self, in_ch, out_ch, kernel_size, divisor):
        super().__init__()
        self.conv = nn.Conv3d(in_ch, out_ch, kernel_size)
        self.divisor = divisor

    def forward(self, x):
        x = self.conv(x)
        x = x / self.divisor
        x = torch.amin(x, dim=1)
        return F.softplus(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CH, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CH, OUT_CH, 3, 1.5]
