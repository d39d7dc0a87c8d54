# Linear layer, subtraction of a learned per-feature offset, Mish, then the maximum over
# the features of each row (kept as size 1). Rows have varied scales.
import torch
import torch.nn as nn
import torch.nn.functional as F

KEVIN_FAMILY = "gemm"

BATCH = 8192
IN_FEATURES = 4096
OUT_FEATURES = 2048
KEVIN_CPU_SIZES = {"BATCH": 128, "IN_FEATURES": 320, "OUT_FEATURES": 288}


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.offset = nn.Parameter(torch.randn(out_features) * 0.5)

    def forward(self, x):
        x = self.linear(x)
        x = x - self.offset
        x = F.mish(x)
        return torch.amax(x, dim=1, keepdim=True)


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES) * (torch.rand(BATCH, 1) * 3.0 + 0.5)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
