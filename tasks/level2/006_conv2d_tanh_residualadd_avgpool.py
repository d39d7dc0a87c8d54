# 3x3 padded convolution y; tanh(y) + y (residual connection around the activation);
# then 3x3 average pooling with stride 2 and padding 1.
import torch
import torch.nn as nn

KEVIN_FAMILY = "conv2d"

BATCH = 32
IN_CH = 64
OUT_CH = 64
HEIGHT = 128
WIDTH = 128
KEVIN_CPU_SIZES = {"BATCH": 4, "IN_CH": 8, "OUT_CH": 16, "HEIGHT": 32, "WIDTH": 32}


class Model(nn.Module):
    def __init__(self, in_ch, out_ch, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_ch, out_ch, kernel_size, padding=kernel_size // 2)
        self.pool = nn.AvgPool2d(3, stride=2, padding=1)

    def forward(self, x):
        y = self.conv(x)
        x = torch.tanh(y) + y
        return self.pool(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CH, OUT_CH, 3]
