# Layer normalisation over the last two dimensions: each (H, W) plane of a
# (BATCH, C, H, W) tensor is normalised to zero mean and unit variance, then an
# elementwise (H, W) weight and bias are applied (nn.LayerNorm((H, W))).
import torch
import torch.nn as nn

KEVIN_FAMILY = "norm"

BATCH = 64
C = 168
H = 64
W = 96
KEVIN_CPU_SIZES = {"BATCH": 4, "C": 24, "H": 32, "W": 48}


class Model(nn.Module):
    def __init__(self, h, w, eps):
        super().__init__()
        self.norm = nn.LayerNorm((h, w), eps=eps)
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
    return [H, W, 1e-5]
