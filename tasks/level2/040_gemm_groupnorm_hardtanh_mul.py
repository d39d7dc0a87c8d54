# Linear layer, group normalisation of the features (groups of consecutive features),
# Hardtanh to [min_val, max_val], then multiplication by a learned per-feature weight.
import torch
import torch.nn as nn
import torch.nn.functional as F

KEVIN_FAMILY = "gemm"

BATCH = 4096
IN_FEATURES = 4096
OUT_FEATURES = 4096
KEVIN_CPU_SIZES = {"BATCH": 128, "IN_FEATURES": 320, "OUT_FEATURES": 288}


class Model(nn.Module):
    def __init__(self, in_features, out_features, num_groups, min_val, max_val):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.norm = nn.GroupNorm(num_groups, out_features)
        self.min_val = min_val
        self.max_val = max_val
        self.weight = nn.Parameter(torch.randn(out_features))

    def forward(self, x):
        x = self.linear(x)
        x = self.norm(x)
        x = F.hardtanh(x, self.min_val, self.max_val)
        return x * self.weight


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES, 16, -1.5, 2.0]
