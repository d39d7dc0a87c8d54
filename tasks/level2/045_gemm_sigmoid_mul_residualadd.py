# Linear layer y; sigmoid(y) times a learned per-feature weight, plus y (residual).
import torch
import torch.nn as nn

KEVIN_FAMILY = "gemm"

BATCH = 4096
IN_FEATURES = 4096
OUT_FEATURES = 8192
KEVIN_CPU_SIZES = {"BATCH": 128, "IN_FEATURES": 320, "OUT_FEATURES": 288}


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.weight = nn.Parameter(torch.randn(out_features))

    def forward(self, x):
        y = self.linear(x)
        x = torch.sigmoid(y) * self.weight
        return x + y


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
