# Transposed 1D convolution (upsampling by 2): kernel 4, stride 2, padding 1, bias;
# input (BATCH, CIN, LENGTH) -> output (BATCH, COUT, 2 * LENGTH).
import torch
import torch.nn as nn

KEVIN_FAMILY = "conv"

BATCH = 32
CIN = 64
COUT = 32
LENGTH = 8192
KEVIN_CPU_SIZES = {"BATCH": 4, "CIN": 32, "COUT": 16, "LENGTH": 1001}


class Model(nn.Module):
    def __init__(self, cin, cout, kernel_size, stride, padding):
        super().__init__()
        self.deconv = nn.ConvTranspose1d(cin, cout, kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        return self.deconv(x)


def get_inputs():
    return [torch.randn(BATCH, CIN, LENGTH)]


def get_init_inputs():
    return [CIN, COUT, 4, 2, 1]
