# 2D max pooling with a 3x3 window, stride 2, padding 1 (as after an image-network stem):
# (BATCH, C, H, W) -> (BATCH, C, ceil(H / 2), ceil(W / 2)) for odd or even H, W.
import torch
import torch.nn as nn

KEVIN_FAMILY = "pooling"

BATCH = 32
C = 64
H = 225
W = 225
KEVIN_CPU_SIZES = {"BATCH": 4, "C": 16, "H": 63, "W": 65}


class Model(nn.Module):
    def __init__(self, kernel_size, stride, padding):
        super().__init__()
        self.pool = nn.MaxPool2d(kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.randn(BATCH, C, H, W)]


def get_init_inputs():
    return [3, 2, 1]
