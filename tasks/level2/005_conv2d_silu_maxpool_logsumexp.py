# 3x3 convolution, SiLU, 2x2 max pooling, then log-sum-exp over the channel dimension
# (kept as a size-1 dimension).
import torch
import torch.nn as nn
import torch.nn.functional as F

KEVIN_FAMILY = "conv2d"

BATCH = 64
IN_CH = 32
OUT_CH = 32
HEIGHT = 98
WIDTH = 98
KEVIN_CPU_SIZES = {"BATCH": 4, "IN_CH": 8, "OUT_CH": 16, "HEIGHT": 34, "WIDTH": 34}


class Model(nn.Module):
    def __init__(self, in_ch, out_ch, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_ch, out_ch, kernel_size)
        self.pool = nn.MaxPool2d(2)

    def forward(self, x):
        x = self.conv(x)
        x = F.silu(x)
        x = self.pool(x)
        return torch.logsumexp(x, dim=1, keepdim=True)


def get_inputs():
    return [torch.randn(BATCH, IN_CH, HEIGHT, WIDTH) * 2.0]


def get_init_inputs():
    return [IN_CH, OUT_CH, 3]
