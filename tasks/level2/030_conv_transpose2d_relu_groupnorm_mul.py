# Transposed 5x5 convolution with kernel padding 2 (same spatial size), ReLU, group
# normalisation, then multiplication by a learned per-channel factor.
import torch
import torch.nn as nn

KEVIN_FAMILY = "conv_transpose2d"

BATCH = 32
IN_CH = 64
OUT_CH = 64
HEIGHT = 96
WIDTH = 96
KEVIN_CPU_SIZES = {"BATCH": 4, "IN_CH": 16, "OUT_CH": 16, "HEIGHT": 20, "WIDTH": 20}


class Model(nn.Module):
    def __init__(self, in_ch, out_ch, kernel_size, num_groups):
        super().__init__()
        self.deconv = nn.ConvTranspose2d(in_ch, out_ch, kernel_size, padding=kernel_size // 2)
        self.norm = nn.GroupNorm(num_groups, out_ch)
        self.gain = nn.Parameter(torch.randn(out_ch, 1, 1))

    def forward(self, x):
        x = self.deconv(x)
        x = torch.relu(x)
        x = self.norm(x)
        return x * self.gain


def get_inputs():
    return [torch.randn(BATCH, IN_CH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CH, OUT_CH, 5, 4]
