# Group normalisation: the C channels are split into GROUPS groups and each (sample, group)
# slice is normalised by its own mean and biased variance, followed by a per-channel
# affine transform (nn.GroupNorm).
import torch
import torch.nn as nn

KEVIN_FAMILY = "norm"

BATCH = 16
C = 64
H = 256
W = 256
KEVIN_CPU_SIZES = {"BATCH": 4, "C": 32, "H": 48, "W": 40}


class Model(nn.Module):
    def __init__(self, groups, channels, eps):
        super().__init__()
        self.norm = nn.GroupNorm(groups, channels, eps=eps)
        with torch.no_grad():
            self.norm.weight.uniform_(0.5, 1.5)
            self.norm.bias.uniform_(-0.5, 0.5)

    def forward(self, x):
        return self.norm(x)


def get_inputs():
    scale = torch.rand(BATCH, C, 1, 1) * 3 + 0.5
    shift = torch.randn(BATCH, C, 1, 1)
    return [torch.randn(BATCH, C, H, W) * scale + shift]


def get_init_inputs():
    return [8, C, 1e-5]
