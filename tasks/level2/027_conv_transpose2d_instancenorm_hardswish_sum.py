# Bias-free transposed 3x3 convolution (stride 1, grows H and W by 2), instance
# normalisation (no affine), HardSwish, then sum over channels (kept as size 1).
import torch
import torch.nn as nn
import torch.nn.functional as F

KEVIN_FAMILY = "conv_transpose2d"

BATCH = 32
IN_CH = 64
OUT_CH = 64
HEIGHT = 126
WIDTH = 126
KEVIN_CPU_SIZES = {"BATCH": 4, "IN_CH": 16, "OUT_CH": 16, "HEIGHT": 30, "WIDTH": 30}


class Model(nn.Module):
    def __init__(self, in_ch, out_ch, kernel_size):
        super().__init__()
        self.deconv = nn.ConvTranspose2d(in_ch, out_ch, kernel_size, bias=False)
        self.norm = nn.InstanceNorm2d(out_ch)

    def forward(self, x):
        x = self.deconv(x)
        x = self.norm(x)
        x = F.hardswish(x)
        return torch.sum(x, dim=1, keepdim=True)


def get_inputs():
    return [torch.randn(BATCH, IN_CH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CH, OUT_CH, 3]
