# Transposed 3x3x3 volumetric convolution (stride 2, padding 1, output_padding 1),
# subtraction of a learned per-channel offset, HardSwish, then log-sum-exp over channels
# (kept as size 1).
import torch
import torch.nn as nn
import torch.nn.functional as F

KEVIN_FAMILY = "conv_transpose3d"

BATCH = 16
IN_CH = 32
OUT_CH = 16
DEPTH = 16
HEIGHT = 32
WIDTH = 32
KEVIN_CPU_SIZES = {"BATCH": 2, "IN_CH": 8, "OUT_CH": 8, "DEPTH": 6, "HEIGHT": 10, "WIDTH": 10}


class Model(nn.Module):
    def __init__(self, in_ch, out_ch, kernel_size, stride):
        super().__init__()
        self.deconv = nn.ConvTranspose3d(in_ch, out_ch, kernel_size, stride=stride, padding=1,
                                         output_padding=1)
        self.offset = nn.Parameter(torch.randn(out_ch, 1, 1, 1))

    def forward(self, x):
        x = self.deconv(x)
        x = x - self.offset
        x = F.hardswish(x)
        return torch.logsumexp(x, dim=1, keepdim=True)


def get_inputs():
    return [torch.randn(BATCH, IN_CH, DEPTH, HEIGHT, WIDTH) * 3.0]


def get_init_inputs():
    return [IN_CH, OUT_CH, 3, 2]
