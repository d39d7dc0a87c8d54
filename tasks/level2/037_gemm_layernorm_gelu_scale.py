# Linear layer (x @ W^T + b), layer normalisation over the features, GELU, then
# multiplication by a constant.
import torch
import torch.nn as nn
import torch.nn.functional as F

KEVIN_FAMILY = "gemm"

BATCH = 4096
IN_FEATURES = 4096
OUT_FEATURES = 4096
KEVIN_CPU_SIZES = {"BATCH": 128, "IN_FEATURES": 320, "OUT_FEATURES": 288}


class Model(nn.Module):
    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.norm = nn.LayerNorm(out_features)
        self.scale = scale

    def forward(self, x):
        x = self.linear(x)
        x = self.norm(x)
        x = F.gelu(x)
        return x * self.scale


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES, 0.5]
