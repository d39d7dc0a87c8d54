# Grouped 2D convolution: the CIN input channels are split into GROUPS groups, each mapped
# to COUT / GROUPS output channels with a 3x3 kernel (padding 1, bias).
import torch
import torch.nn as nn

KEVIN_FAMILY = "conv"

BATCH = 16
CIN = 128
COUT = 256
H = 96
W = 96
KEVIN_CPU_SIZES = {"BATCH": 4, "CIN": 32, "COUT": 64, "H": 27, "W": 29}


class Model(nn.Module):
    def __init__(self, cin, cout, groups):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, kernel_size=3, padding=1, groups=groups)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, CIN, H, W)]


def get_init_inputs():
    return [CIN, COUT, 8]
