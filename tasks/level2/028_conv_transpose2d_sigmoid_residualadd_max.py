# Transposed 4x4 convolution (stride 2, padding 1) y; sigmoid(y) + y (residual around
# the activation); then maximum over channels (kept as size 1).
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
    def __init__(self, in_ch, out_ch, kernel_size, stride):
        super().__init__()
        self.deconv = nn.ConvTranspose2d(in_ch, out_ch, kernel_size, stride=stride, padding=1)

    def forward(self, x):
        y = self.deconv(x)
        x = torch.sigmoid(y) + y
        return torch.amax(x, dim=1, keepdim=True)


def get_inputs():
    return [torch.randn(BATCH, IN_CH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CH, OUT_CH, 4, 2]
