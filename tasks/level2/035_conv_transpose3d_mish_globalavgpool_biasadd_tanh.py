# Transposed 3x3x3 volumetric convolution (stride 2), Mish, global average pooling over
# D, H, W (output N x C x 1 x 1 x 1), addition of a learned per-channel bias, then tanh.
# Input channels carry per-sample scales so the pooled statistics vary.
import torch
import torch.nn as nn
import torch.nn.functional as F

KEVIN_FAMILY = "conv_transpose3d"

BATCH = 256
IN_CH = 64
OUT_CH = 64
DEPTH = 4
HEIGHT = 8
WIDTH = 8
KEVIN_CPU_SIZES = {"BATCH": 8, "IN_CH": 8, "OUT_CH": 8, "DEPTH": 4, "HEIGHT": 6, "WIDTH": 6}


class Model(nn.Module):
    def __init__(self, in_ch, out_ch, kernel_size, stride):
        super().__init__()
        self.deconv = nn.ConvTranspose3d(in_ch, out_ch, kernel_size, stride=stride)
        self.bias = nn.Parameter(torch.randn(out_ch, 1, 1, 1) * 0.5)

    def forward(self, x):
        x = self.deconv(x)
        x = F.mish(x)
        x = torch.mean(x, dim=(2, 3, 4), keepdim=True)
        x = x + self.bias
        return torch.tanh(x)


def get_inputs():
    scale = torch.rand(BATCH, IN_CH, 1, 1, 1) * 3.0 + 0.25
    return [torch.randn(BATCH, IN_CH, DEPTH, HEIGHT, WIDTH) * scale]


def get_init_inputs():
    return [IN_CH, OUT_CH, 3, 2]
