# Transposed 4x4x4 volumetric convolution (stride 2, padding 1), tanh, multiplication by a
# learned per-channel factor, then 2x2x2 max pooling.
import torch
import torch.nn as nn

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
        self.deconv = nn.ConvTranspose3d(in_ch, out_ch, kernel_size, stride=stride, padding=1)
        self.gain = nn.Parameter(torch.randn(out_ch, 1, 1, 1))
        self.pool = nn.MaxPool3d(2)

    def forward(self, x):
        x = self.deconv(x)
        x = torch.tanh(x)
        x = x * self.gain
        return self.pool(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CH, DEPTH, HEIGHT, WIDTH) * 2.0]


def get_init_inputs():
    return [IN_CH, OUT_CH, 4, 2]
