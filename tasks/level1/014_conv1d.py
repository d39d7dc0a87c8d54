# 1D convolution (nn.Conv1d with bias, kernel 5, padding 2, stride 1) over a batch of
# multi-channel sequences of shape (BATCH, CIN, LENGTH); output (BATCH, COUT, LENGTH).
import torch
import torch.nn as nn

KEVIN_FAMILY = "conv"

BATCH = 32
CIN = 64
COUT = 128
LENGTH = 8192
KEVIN_CPU_SIZES = {"BATCH": 4, "CIN": 16, "COUT": 24, "LENGTH": 1001}


class Model(nn.Module):
    def __init__(self, cin, cout, kernel_size, padding):
        super().__init__()
        self.conv = nn.Conv1d(cin, cout, kernel_size, padding=padding)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, CIN, LENGTH)]


def get_init_inputs():
    return [CIN, COUT, 5, 2]
