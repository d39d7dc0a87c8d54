# 1D average pooling, window 5, stride 1, padding 2 (zero padding counted in the average):
# a moving average that keeps the length of (BATCH, C, LENGTH).
import torch
import torch.nn as nn

KEVIN_FAMILY = "pooling"

BATCH = 64
C = 128
LENGTH = 8192
KEVIN_CPU_SIZES = {"BATCH": 4, "C": 32, "LENGTH": 2001}


class Model(nn.Module):
    def __init__(self, kernel_size, stride, padding):
        super().__init__()
        self.pool = nn.AvgPool1d(kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.randn(BATCH, C, LENGTH)]


def get_init_inputs():
    return [5, 1, 2]
