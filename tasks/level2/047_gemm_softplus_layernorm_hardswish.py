# Linear layer, Softplus, layer normalisation over the features (eps given), then HardSwish.
import torch
import torch.nn as nn
import torch.nn.functional as F

KEVIN_FAMILY = "gemm"

BATCH = 4096
IN_FEATURES = 4096
OUT_FEATURES = 6144
KEVIN_CPU_SIZES = {"BATCH": 128, "IN_FEATURES": 320, "OUT_FEATURES": 288}


class Model(nn.Module):
    def __init__(self, in_features, out_features, eps):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.norm = nn.LayerNorm(out_features, eps=eps)

    def forward(self, x):
        x = self.linear(x)
        x = F.softplus(x)
        x = self.norm(x)
        return F.hardswish(x)


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES, 1e-3]
