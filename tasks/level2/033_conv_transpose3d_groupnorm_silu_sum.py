# Transposed 3x3x3 volumetric convolution (stride 2), group normalisation, SiLU, then
# sum over channels (kept as size 1).
import torch
import torch.nn as nn
import torch.nn.functional as F

KEVIN_FAMILY = "conv_transpose3d"

BATCH = 16
IN_CH = 32
OUT_CH = 32
DEPTH = 15
HEIGHT = 31
WIDTH = 31
KEVIN_CPU_SIZES = {"BATCH": 2, "IN_CH": 8, "OUT_CH": 8, "DEPTH": 5, "HEIGHT": 9, "WIDTH": 9}


class Model(nn.Module):
    def __init__(self, in_ch, out_ch, kernel_size, stride, num_groups):
        super().__init__()
        self.deconv = nn.ConvTranspose3d(in_ch, out_ch, kernel_size, stride=stride)
        self.norm = nn.GroupNorm(num_groups, out_ch)

    def forward(self, x):
        x = self.deconv(x)
        x = self.norm(x)
        x = F.silu(x)
        return torch.sum(x, dim=1, keepdim=True)


def get_inputs():
    return [torch.randn(BATCH, IN_CH, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CH, OUT_CH, 3, 2, 4]
