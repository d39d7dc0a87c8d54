# Transposed 2D convolution: 3x3 kernel, stride 2, padding 1, output_padding 1, bias;
# doubles the spatial size: (BATCH, CIN, H, W) -> (BATCH, COUT, 2H, 2W).
import torch
import torch.nn as nn

KEVIN_FAMILY = "conv"

BATCH = 16
CIN = 64
COUT = 32
H = 96
W = 96
KEVIN_CPU_SIZES = {"BATCH": 4, "CIN": 16, "COUT": 12, "H": 25, "W": 23}


class Model(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.deconv = nn.ConvTranspose2d(cin, cout, kernel_size=3, stride=2, padding=1,
                                         output_padding=1)

    def forward(self, x):
        return self.deconv(x)


def get_inputs():
    return [torch.randn(BATCH, CIN, H, W)]


def get_init_inputs():
    return [CIN, COUT]
