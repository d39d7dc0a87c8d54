# Bias-free transposed 3x3x3 volumetric convolution (stride 2, padding 1, output_padding 1:
# doubles D, H, W), batch normalisation with batch statistics (no running stats), GELU,
# then 2x2x2 average pooling.
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
                                         output_padding=1, bias=False)
        self.bn = nn.BatchNorm3d(out_ch, track_running_stats=False)
        self.pool = nn.AvgPool3d(2)

    def forward(self, x):
        x = self.deconv(x)
        x = self.bn(x)
        x = F.gelu(x)
        return self.pool(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CH, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CH, OUT_CH, 3, 2]
