# 1D max pooling over sequences of shape (BATCH, C, LENGTH): window 4, stride 2,
# padding 1 (padded positions never win) -> (BATCH, C, (LENGTH - 2) // 2 + 1).
import torch
import torch.nn as nn

KEVIN_FAMILY = "pooling"

BATCH = 64
C = 128
LENGTH = 12288
KEVIN_CPU_SIZES = {"BATCH": 4, "C": 32, "LENGTH": 2001}


class Model(nn.Module):
    def __init__(self, kernel_size, stride, padding):
        super().__init__()
        self.pool = nn.MaxPool1d(kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.randn(BATCH, C, LENGTH)]


def get_init_inputs():
    return [4, 2, 1]
