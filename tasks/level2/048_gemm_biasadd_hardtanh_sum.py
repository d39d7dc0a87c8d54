# Linear layer, addition of a learned per-feature bias, Hardtanh to [-1, 1], then sum over
# the features of each row (kept as size 1).
import torch
import torch.nn as nn
import torch.nn.functional as F

KEVIN_FAMILY = "gemm"

BATCH = 8192
IN_FEATURES = 4096
OUT_FEATURES = 4096
KEVIN_CPU_SIZES = {"BATCH": 128, "IN_FEATURES": 320, "OUT_FEATURES": 288}


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.bias = nn.Parameter(torch.randn(out_features) * 0.5)

    def forward(self, x):
        x = self.linear(x)
        x = x + self.bias
        x = F.hardtanh(x)
        return torch.sum(x, dim=1, keepdim=True)


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES) * 2.0]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
