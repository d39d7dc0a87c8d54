# Dilated 3x3 convolution (dilation 2, padding 2), 2x2 average pooling, maximum over
# channels (channel dimension removed), then Mish.
import torch
import torch.nn as nn
import torch.nn.functional as F

KEVIN_FAMILY = "conv2d"

BATCH = 64
IN_CH = 32
OUT_CH = 32
HEIGHT = 128
WIDTH = 128
KEVIN_CPU_SIZES = {"BATCH": 4, "IN_CH": 8, "OUT_CH": 16, "HEIGHT": 32, "WIDTH": 32}


class Model(nn.Module):
    def __init__(self, in_ch, out_ch, kernel_size, dilation):
        super().__init__()
        self.conv = nn.Conv2d(in_ch, out_ch, kernel_size, padding=dilation, dilation=dilation)
        self.pool = nn.AvgPool2d(2)

    def forward(self, x):
        x = self.conv(x)
        x = self.pool(x)
        x = torch.amax(x, dim=1)
        return F.mish(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CH, HEIGHT, WIDTH) * 2.0]


def get_init_inputs():
    return [IN_CH, OUT_CH, 3, 2]
