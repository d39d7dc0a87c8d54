# Bias-free 3x3 convolution, batch normalisation with batch statistics (no running stats),
# 2x2 max pooling, then Hardtanh clipping to [min_val, max_val].
import torch
import torch.nn as nn

KEVIN_FAMILY = "conv2d"

BATCH = 128
IN_CH = 16
OUT_CH = 64
HEIGHT = 96
WIDTH = 96
KEVIN_CPU_SIZES = {"BATCH": 4, "IN_CH": 8, "OUT_CH": 16, "HEIGHT": 32, "WIDTH": 32}


class Model(nn.Module):
    def __init__(self, in_ch, out_ch, kernel_size, min_val, max_val):
        super().__init__()
        self.conv = nn.Conv2d(in_ch, out_ch, kernel_size, bias=False)
        self.bn = nn.BatchNorm2d(out_ch, track_running_stats=False)
        self.pool = nn.MaxPool2d(2)
        self.act = nn.Hardtanh(min_val, max_val)

    def forward(self, x):
        x = self.conv(x)
        x = self.bn(x)
        x = self.pool(x)
        return self.act(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CH, OUT_CH, 3, -1.0, 2.0]
