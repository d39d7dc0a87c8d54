# Transposed 3x3 convolution (stride 2, padding 1, output_padding 1: doubles H and W),
# tanh, multiplication by a constant, addition of a learned per-channel bias,
# then 2x2 max pooling.
import torch
import torch.nn as nn

KEVIN_FAMILY = "conv_transpose2d"

BATCH = 32
IN_CH = 64
OUT_CH = 32
HEIGHT = 64
WIDTH = 64
KEVIN_CPU_SIZES = {"BATCH": 4, "IN_CH": 16, "OUT_CH": 8, "HEIGHT": 16, "WIDTH": 16}


class Model(nn.Module):
    def __init__(self, in_ch, out_ch, kernel_size, stride, scale):
        super().__init__()
        self.deconv = nn.ConvTranspose2d(in_ch, out_ch, kernel_size, stride=stride,
                                         padding=1, output_padding=1)
        self.scale = scale
        self.bias = nn.Parameter(torch.randn(out_ch, 1, 1))
        self.pool = nn.MaxPool2d(2)

    def forward(self, x):
        x = self.deconv(x)
        x = torch.tanh(x)
        x = x * self.scale
        x = x + self.bias
        return self.pool(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CH, HEIGHT, WIDTH) * 2.0]


def get_init_inputs():
    return [IN_CH, OUT_CH, 3, 2, 2.0]
