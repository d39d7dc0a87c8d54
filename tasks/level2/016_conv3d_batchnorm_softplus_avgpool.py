# Bias-free 3x3x3 padded volumetric convolution, batch normalisation with batch statistics
# (no running stats), Softplus, then 2x2x2 average pooling.
import torch
import torch.nn as nn
import torch.nn.functional as F

KEVIN_FAMILY = "conv3d"

BATCH = 16
IN_CH = 16
OUT_CH = 32
DEPTH = 32
HEIGHT = 64
WIDTH = 64
KEVIN_CPU_SIZES = {"BATCH": 2, "IN_CH": 4, "OUT_CH": 8, "DEPTH": 8, "HEIGHT": 16, "WIDTH": 16}


class Model(nn.Module):
    def __init__(self, in_ch, out_ch, kernel_size):
        super().__init__()
        self.conv = nn.Conv3d(in_ch, out_ch, kernel_size, padding=1, bias=False)
        self.bn = nn.BatchNorm3d(out_ch, track_running_stats=False)
        self.pool = nn.AvgPool3d(2)

    def forward(self, x):
        x = self.conv(x)
        x = self.bn(x)
        x = F.softplus(x)
        return self.pool(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CH, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CH, OUT_CH, 3]
