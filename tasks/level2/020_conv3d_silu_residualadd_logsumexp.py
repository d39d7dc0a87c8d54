# 3x3x3 volumetric convolution y; silu(y) + y (residual around the activation); then
# log-sum-exp over channels (kept as size 1).
import torch
import torch.nn as nn
import torch.nn.functional as F

KEVIN_FAMILY = "conv3d"

BATCH = 16
IN_CH = 16
OUT_CH = 32
DEPTH = 32
HEIGHT = 64
WIDTH = 64
KEVIN_CPU_SIZES = {"BATCH": 2, "IN_CH": 4, "OUT_CH": 8, "DEPTH": 8, "HEIGHT": 16, "WIDTH": 16}


class Model(nn.Module):
    def __init__(self, in_ch, out_ch, kernel_size):
        super().__init__()
        self.conv = nn.Conv3d(in_ch, out_ch, kernel_size)

    def forward(self, x):
        y = self.conv(x)
        x = F.silu(y) + y
        return torch.logsumexp(x, dim=1, keepdim=True)


def get_inputs():
    return [torch.randn(BATCH, IN_CH, DEPTH, HEIGHT, WIDTH) * 2.0]


def get_init_inputs():
    return [IN_CH, OUT_CH, 3]
