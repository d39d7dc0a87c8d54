# Transposed 3x3 convolution (stride 2), group normalisation, SiLU, then subtraction of a
# learned per-channel offset.
import torch
import torch.nn as nn
import torch.nn.functional as F

KEVIN_FAMILY = "conv_transpose2d"

BATCH = 32
IN_CH = 64
OUT_CH = 64
HEIGHT = 63
WIDTH = 63
KEVIN_CPU_SIZES = {"BATCH": 4, "IN_CH": 16, "OUT_CH": 16, "HEIGHT": 15, "WIDTH": 15}


class Model(nn.Module):
    def __init__(self, in_ch, out_ch, kernel_size, stride, num_groups):
        super().__init__()
        self.deconv = nn.ConvTranspose2d(in_ch, out_ch, kernel_size, stride=stride)
        self.norm = nn.GroupNorm(num_groups, out_ch)
        self.offset = nn.Parameter(torch.randn(out_ch, 1, 1))

    def forward(self, x):
        x = self.deconv(x)
        x = self.norm(x)
        x = F.silu(x)
        return x - self.offset


def get_inputs():
    return [torch.randn(BATCH, IN_CH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CH, OUT_CH, 3, 2, 4]
