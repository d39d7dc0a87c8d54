# Linear layer, ReLU, group normalisation of the features (groups of consecutive
# features), then Softplus.
import torch
import torch.nn as nn
import torch.nn.functional as F

KEVIN_FAMILY = "gemm"

BATCH = 4096
IN_FEATURES = 8192
OUT_FEATURES = 4096
KEVIN_CPU_SIZES = {"BATCH": 128, "IN_FEATURES": 320, "OUT_FEATURES": 288}


class Model(nn.Module):
    def __init__(self, in_features, out_features, num_groups):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.norm = nn.GroupNorm(num_groups, out_features)

    def forward(self, x):
        x = self.linear(x)
        x = torch.relu(x)
        x = self.norm(x)
        return F.softplus(x)


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES, 16]
