# 2D convolution without bias using a non-square 3x7 kernel and padding (1, 3) on a
# non-square image: input (BATCH, CIN, H, W) -> output (BATCH, COUT, H, W).
import torch
import torch.nn as nn

KEVIN_FAMILY = "conv"

BATCH = 16
CIN = 48
COUT = 80
H = 96
W = 200
KEVIN_CPU_SIZES = {"BATCH": 4, "CIN": 12, "COUT": 20, "H": 27, "W": 61}


class Model(nn.Module):
    def __init__(self, cin, cout, kernel_size, padding):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, kernel_size, padding=padding, bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, CIN, H, W)]


def get_init_inputs():
    return [CIN, COUT, (3, 7), (1, 3)]
