# Bias-free 3x3x3 volumetric convolution, instance normalisation (no affine), Mish,
# then 2x2x2 max pooling.
import torch
import torch.nn as nn
import torch.nn.functional as F

KEVIN_FAMILY = "conv3d"

BATCH = 16
IN_CH = 16
OUT_CH = 32
DEPTH = 34
HEIGHT = 66
WIDTH = 66
KEVIN_CPU_SIZES = {"BATCH": 2, "IN_CH": 4, "OUT_CH": 8, "DEPTH": 10, "HEIGHT": 18, "WIDTH": 18}


class Model(nn.Module):
    def __init__(self, in_ch, out_ch, kernel_size):
        super().__init__()
        self.conv = nn.Conv3d(in_ch, out_ch, kernel_size, bias=False)
        self.norm = nn.InstanceNorm3d(out_ch)
        self.pool = nn.MaxPool3d(2)

    def forward(self, x):
        x = self.conv(x)
        x = self.norm(x)
        x = F.mish(x)
        return self.pool(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CH, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CH, OUT_CH, 3]
