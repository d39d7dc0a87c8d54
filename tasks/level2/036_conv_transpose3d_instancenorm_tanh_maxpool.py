# Bias-free transposed 3x3x3 volumetric convolution (stride 2, padding 1), instance
# normalisation (no affine), tanh, then 3x3x3 max pooling with stride 2.
import torch
import torch.nn as nn

KEVIN_FAMILY = "conv_transpose3d"

BATCH = 16
IN_CH = 32
OUT_CH = 32
DEPTH = 16
HEIGHT = 32
WIDTH = 32
KEVIN_CPU_SIZES = {"BATCH": 2, "IN_CH": 8, "OUT_CH": 8, "DEPTH": 6, "HEIGHT": 10, "WIDTH": 10}


class Model(nn.Module):
    def __init__(self, in_ch, out_ch, kernel_size, stride):
        super().__init__()
        self.deconv = nn.ConvTranspose3d(in_ch, out_ch, kernel_size, stride=stride, padding=1,
                                         bias=False)
        self.norm = nn.InstanceNorm3d(out_ch)
        self.pool = nn.MaxPool3d(3, stride=2)

    def forward(self, x):
        x = self.deconv(x)
        x = self.norm(x)
        x = torch.tanh(x)
        return self.pool(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CH, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CH, OUT_CH, 3, 2]
