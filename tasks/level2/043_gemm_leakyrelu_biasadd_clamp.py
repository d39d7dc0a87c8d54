# Linear layer, LeakyReLU, addition of a learned per-feature bias, then clamping to
# [clamp_min, clamp_max].
import torch
import torch.nn as nn
import torch.nn.functional as F

KEVIN_FAMILY = "gemm"

BATCH = 8192
IN_FEATURES = 4096
OUT_FEATURES = 4096
KEVIN_CPU_SIZES = {"BATCH": 128, "IN_FEATURES": 320, "OUT_FEATURES": 288}


class Model(nn.Module):
    def __init__(self, in_features, out_features, negative_slope, clamp_min, clamp_max):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.negative_slope = negative_slope
        self.bias = nn.Parameter(torch.randn(out_features) * 0.5)
        self.clamp_min = clamp_min
        self.clamp_max = clamp_max

    def forward(self, x):
        x = self.linear(x)
        x = F.leaky_relu(x, self.negative_slope)
        x = x + self.bias
        return torch.clamp(x, self.clamp_min, self.clamp_max)


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES) * 2.0]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES, 0.05, -1.0, 1.5]
