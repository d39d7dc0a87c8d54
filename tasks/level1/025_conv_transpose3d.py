# Transposed 3D convolution: 3x3x3 kernel, stride 2, padding 1, bias;
# (BATCH, CIN, D, H, W) -> (BATCH, COUT, 2D-1, 2H-1, 2W-1).
import torch
import torch.nn as nn

KEVIN_FAMILY = "conv"

BATCH = 8
CIN = 32
COUT = 16
D = 24
H = 32
W = 32
KEVIN_CPU_SIZES = {"BATCH": 2, "CIN": 8, "COUT": 6, "D": 10, "H": 12, "W": 14}


class Model(nn.Module):
    def __init__(self, cin, cout, kernel_size, stride, padding):
        super().__init__()
        self.deconv = nn.ConvTranspose3d(cin, cout, kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        return self.deconv(x)


def get_inputs():
    return [torch.randn(BATCH, CIN, D, H, W)]


def get_init_inputs():
    return [CIN, COUT, 3, 2, 1]
