# 3D max pooling with a 2x2x2 window and stride 2 on volumes (BATCH, C, D, H, W)
# -> (BATCH, C, D/2, H/2, W/2) (odd trailing planes are dropped).
import torch
import torch.nn as nn

KEVIN_FAMILY = "pooling"

BATCH = 8
C = 32
D = 64
H = 96
W = 80
KEVIN_CPU_SIZES = {"BATCH": 2, "C": 8, "D": 21, "H": 25, "W": 30}


class Model(nn.Module):
    def __init__(self, kernel_size):
        super().__init__()
        self.pool = nn.MaxPool3d(kernel_size)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.randn(BATCH, C, D, H, W)]


def get_init_inputs():
    return [2]
