# Bias-free 3x3 padded convolution, instance normalisation (no affine), LeakyReLU,
# then multiplication by a learned per-channel factor.
import torch
import torch.nn as nn
import torch.nn.functional as F

KEVIN_FAMILY = "conv2d"

BATCH = 64
IN_CH = 32
OUT_CH = 64
HEIGHT = 128
WIDTH = 128
KEVIN_CPU_SIZES = {"BATCH": 4, "IN_CH": 8, "OUT_CH": 16, "HEIGHT": 32, "WIDTH": 32}


class Model(nn.Module):
    def __init__(self, in_ch, out_ch, kernel_size, negative_slope):
        super().__init__()
        self.conv = nn.Conv2d(in_ch, out_ch, kernel_size, padding=1, bias=False)
        self.norm = nn.InstanceNorm2d(out_ch)
        self.negative_slope = negative_slope
        self.gain = nn.Parameter(torch.randn(out_ch, 1, 1))

    def forward(self, x):
        x = self.conv(x)
        x = self.norm(x)
        x = F.leaky_relu(x, self.negative_slope)
        return x * self.gain


def get_inputs():
    return [torch.randn(BATCH, IN_CH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CH, OUT_CH, 3, 0.1]
