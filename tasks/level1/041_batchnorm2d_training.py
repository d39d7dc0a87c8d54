# Batch normalisation of a 4D tensor with training-mode statistics: each channel is
# normalised by the mean and biased variance over (batch, H, W) of this very input,
# then scaled and shifted by learned per-channel weight and bias. No running stats.
import torch
import torch.nn as nn
import torch.nn.functional as F

KEVIN_FAMILY = "norm"

BATCH = 32
C = 96
H = 160
W = 160
KEVIN_CPU_SIZES = {"BATCH": 8, "C": 16, "H": 48, "W": 56}


class Model(nn.Module):
    def __init__(self, channels, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.rand(channels) + 0.5)
        self.bias = nn.Parameter(torch.randn(channels) * 0.5)

    def forward(self, x):
        return F.batch_norm(x, None, None, self.weight, self.bias, training=True,
                            momentum=0.0, eps=self.eps)


def get_inputs():
    scale = torch.rand(1, C, 1, 1) * 3 + 0.5
    shift = torch.randn(1, C, 1, 1) * 2
    return [torch.randn(BATCH, C, H, W) * scale + shift]


def get_init_inputs():
    return [C, 1e-5]
