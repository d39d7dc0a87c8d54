# 3x3x3 volumetric convolution with stride (1, 2, 2), 2x2x2 average pooling, ReLU,
# then addition of a learned per-channel bias.
import torch
import torch.nn as nn

KEVIN_FAMILY = "conv3d"

BATCH = 16
IN_CH = 16
OUT_CH = 64
DEPTH = 32
HEIGHT = 128
WIDTH = 128
KEVIN_CPU_SIZES = {"BATCH": 2, "IN_CH": 4, "OUT_CH": 8, "DEPTH": 8, "HEIGHT": 32, "WIDTH": 32}


class Model(nn.Module):
    def __init__(self, in_ch, out_ch, kernel_size, stride):
        super().__init__()
        self.conv = nn.Conv3d(in_ch, out_ch, kernel_size, stride=stride)
        self.pool = nn.AvgPool3d(2)
        self.bias = nn.Parameter(torch.randn(out_ch, 1, 1, 1))

    def forward(self, x):
        x = self.conv(x)
        x = self.pool(x)
        x = torch.relu(x)
        return x + self.bias


def get_inputs():
    return [torch.randn(BATCH, IN_CH, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CH, OUT_CH, 3, (1, 2, 2)]
