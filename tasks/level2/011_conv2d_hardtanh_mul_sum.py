# Convolution with a rectangular 3x5 kernel and matching padding, Hardtanh to [-1, 1],
# multiplication by a learned per-channel weight, then sum over channels (kept as size 1).
import torch
import torch.nn as nn
import torch.nn.functional as F

KEVIN_FAMILY = "conv2d"

BATCH = 32
IN_CH = 32
OUT_CH = 64
HEIGHT = 128
WIDTH = 96
KEVIN_CPU_SIZES = {"BATCH": 4, "IN_CH": 8, "OUT_CH": 16, "HEIGHT": 32, "WIDTH": 24}


class Model(nn.Module):
    def __init__(self, in_ch, out_ch, kernel_size, padding):
        super().__init__()
        self.conv = nn.Conv2d(in_ch, out_ch, kernel_size, padding=padding)
        self.weight = nn.Parameter(torch.randn(out_ch, 1, 1))

    def forward(self, x):
        x = self.conv(x)
        x = F.hardtanh(x, -1.0, 1.0)
        x = x * self.weight
        return torch.sum(x, dim=1, keepdim=True)


def get_inputs():
    return [torch.randn(BATCH, IN_CH, HEIGHT, WIDTH) * 2.0]


def get_init_inputs():
    return [IN_CH, OUT_CH, (3, 5), (1, 2)]
