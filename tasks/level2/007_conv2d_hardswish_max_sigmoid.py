# Strided 3x3 convolution, HardSwish, maximum over the channel dimension (kept as size 1),
# then sigmoid.
import torch
import torch.nn as nn
import torch.nn.functional as F

KEVIN_FAMILY = "conv2d"

BATCH = 64
IN_CH = 32
OUT_CH = 64
HEIGHT = 192
WIDTH = 192
KEVIN_CPU_SIZES = {"BATCH": 4, "IN_CH": 8, "OUT_CH": 16, "HEIGHT": 48, "WIDTH": 48}


class Model(nn.Module):
    def __init__(self, in_ch, out_ch, kernel_size, stride):
        super().__init__()
        self.conv = nn.Conv2d(in_ch, out_ch, kernel_size, stride=stride)

    def forward(self, x):
        x = self.conv(x)
        x = F.hardswish(x)
        x = torch.amax(x, dim=1, keepdim=True)
        return torch.sigmoid(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CH, OUT_CH, 3, 2]
