# Strided 2D convolution as in an image-network stem: 7x7 kernel, stride 2, padding 3,
# bias; input (BATCH, 3, H, W) -> output (BATCH, COUT, H/2, W/2) (rounded up).
import torch
import torch.nn as nn

KEVIN_FAMILY = "conv"

BATCH = 32
CIN = 3
COUT = 64
H = 224
W = 224
KEVIN_CPU_SIZES = {"BATCH": 4, "CIN": 3, "COUT": 32, "H": 62, "W": 70}


class Model(nn.Module):
    def __init__(self, cin, cout, kernel_size, stride, padding):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, CIN, H, W)]


def get_init_inputs():
    return [CIN, COUT, 7, 2, 3]
