# Linear layer, multiplication by a run-time scalar passed to forward, tanh, then the
# maximum over the features of each row (kept as size 1). Rows have varied scales.
import torch
import torch.nn as nn

KEVIN_FAMILY = "gemm"

BATCH = 8192
IN_FEATURES = 4096
OUT_FEATURES = 4096
KEVIN_CPU_SIZES = {"BATCH": 128, "IN_FEATURES": 320, "OUT_FEATURES": 288}


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x, scale):
        x = self.linear(x)
        x = x * scale
        x = torch.tanh(x)
        return torch.amax(x, dim=1, keepdim=True)


def get_inputs():
    x = torch.randn(BATCH, IN_FEATURES) * (torch.rand(BATCH, 1) * 0.9 + 0.1)
    return [x, 0.6]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
