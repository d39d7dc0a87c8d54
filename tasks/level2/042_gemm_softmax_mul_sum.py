# Linear layer, softmax over the output features, multiplication by a learned per-feature
# value, then sum over the features (kept as size 1): a softmax-weighted average of the
# values per row. Rows have varied scales.
import torch
import torch.nn as nn

KEVIN_FAMILY = "gemm"

BATCH = 8192
IN_FEATURES = 4096
OUT_FEATURES = 1024
KEVIN_CPU_SIZES = {"BATCH": 128, "IN_FEATURES": 320, "OUT_FEATURES": 288}


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.values = nn.Parameter(torch.randn(out_features))

    def forward(self, x):
        x = self.linear(x)
        x = torch.softmax(x, dim=1)
        x = x * self.values
        return torch.sum(x, dim=1, keepdim=True)


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES) * (torch.rand(BATCH, 1) * 4.0 + 1.0)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
