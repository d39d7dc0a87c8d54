# Bias-free 3x3 convolution with stride 2, batch normalisation with batch statistics
# (no running stats), GELU, then 3x3 max pooling with stride 2.
import torch
import torch.nn as nn
import torch.nn.functional as F

KEVIN_FAMILY = "conv2d"

BATCH = 64
IN_CH = 64
OUT_CH = 128
HEIGHT = 128
WIDTH = 128
KEVIN_CPU_SIZES = {"BATCH": 4, "IN_CH": 8, "OUT_CH": 16, "HEIGHT": 40, "WIDTH": 40}


class Model(nn.Module):
    def __init__(self, in_ch, out_ch, kernel_size, stride):
        super().__init__()
        self.conv = nn.Conv2d(in_ch, out_ch, kernel_size, stride=stride, bias=False)
        self.bn = nn.BatchNorm2d(out_ch, track_running_stats=False)
        self.pool = nn.MaxPool2d(3, stride=2)

    def forward(self, x):
        x = self.conv(x)
        x = self.bn(x)
        x = F.gelu(x)
        return self.pool(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CH, OUT_CH, 3, 2]
