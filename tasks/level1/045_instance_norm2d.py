# Instance normalisation without affine parameters: every (sample, channel) plane of a
# (BATCH, C, H, W) tensor is normalised by its own mean and biased variance.
import torch
import torch.nn as nn

KEVIN_FAMILY = "norm"

BATCH = 32
C = 64
H = 192
W = 192
KEVIN_CPU_SIZES = {"BATCH": 4, "C": 16, "H": 48, "W": 48}


class Model(nn.Module):
    def __init__(self, channels, eps):
        super().__init__()
        self.norm = nn.InstanceNorm2d(channels, eps=eps)

    def forward(self, x):
        return self.norm(x)


def get_inputs():
    scale = torch.rand(BATCH, C, 1, 1) * 3 + 0.5
    shift = torch.randn(BATCH, C, 1, 1)
    return [torch.randn(BATCH, C, H, W) * scale + shift]


def get_init_inputs():
    return [C, 1e-5]
