# 3x3 convolution, ReLU, addition of a learned per-channel bias, then softmax across
# the channels at every pixel.
import torch
import torch.nn as nn

KEVIN_FAMILY = "conv2d"

BATCH = 64
IN_CH = 32
OUT_CH = 16
HEIGHT = 128
WIDTH = 128
KEVIN_CPU_SIZES = {"BATCH": 4, "IN_CH": 8, "OUT_CH": 8, "HEIGHT": 32, "WIDTH": 32}


class Model(nn.Module):
    def __init__(self, in_ch, out_ch, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_ch, out_ch, kernel_size)
        self.bias = nn.Parameter(torch.randn(out_ch, 1, 1) * 0.5)

    def forward(self, x):
        x = self.conv(x)
        x = torch.relu(x)
        x = x + self.bias
        return torch.softmax(x, dim=1)


def get_inputs():
    return [torch.randn(BATCH, IN_CH, HEIGHT, WIDTH) * 3.0]


def get_init_inputs():
    return [IN_CH, OUT_CH, 3]
