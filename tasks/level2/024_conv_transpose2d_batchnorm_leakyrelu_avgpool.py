# Bias-free transposed 4x4 convolution (stride 2, padding 1), batch normalisation with
# batch statistics (no running stats), LeakyReLU, then 2x2 average pooling.
import torch
import torch.nn as nn
import torch.nn.functional as F

KEVIN_FAMILY = "conv_transpose2d"

BATCH = 32
IN_CH = 64
OUT_CH = 64
HEIGHT = 64
WIDTH = 64
KEVIN_CPU_SIZES = {"BATCH": 4, "IN_CH": 16, "OUT_CH": 16, "HEIGHT": 16, "WIDTH": 16}


class Model(nn.Module):
    def __init__(self, in_ch, out_ch, kernel_size, stride, negative_slope):
        super().__init__()
        self.deconv = nn.ConvTranspose2d(in_ch, out_ch, kernel_size, stride=stride, padding=1,
                                         bias=False)
        self.bn = nn.BatchNorm2d(out_ch, track_running_stats=False)
        self.negative_slope = negative_slope
        self.pool = nn.AvgPool2d(2)

    def forward(self, x):
        x = self.deconv(x)
        x = self.bn(x)
        x = F.leaky_relu(x, self.negative_slope)
        return self.pool(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CH, OUT_CH, 4, 2, 0.05]
