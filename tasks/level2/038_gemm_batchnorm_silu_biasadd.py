# Bias-free linear layer, batch normalisation over the batch (batch statistics, no running
# stats), SiLU, then addition of a learned per-feature bias.
import torch
import torch.nn as nn
import torch.nn.functional as F

KEVIN_FAMILY = "gemm"

BATCH = 8192
IN_FEATURES = 2048
OUT_FEATURES = 4096
KEVIN_CPU_SIZES = {"BATCH": 128, "IN_FEATURES": 320, "OUT_FEATURES": 288}


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features, bias=False)
        self.bn = nn.BatchNorm1d(out_features, track_running_stats=False)
        self.bias = nn.Parameter(torch.randn(out_features))

    def forward(self, x):
        x = self.linear(x)
        x = self.bn(x)
        x = F.silu(x)
        return x + self.bias


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
