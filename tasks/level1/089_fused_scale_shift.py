# Fused broadcast multiply-add: out[i, j] = a[i, 0] * x[i, j] + b[j], with a per-row
# scale a of shape (M, 1) and a per-column shift b of shape (N,).
import torch
import torch.nn as nn

KEVIN_FAMILY = "elementwise"

M = 8192
N = 12288
KEVIN_CPU_SIZES = {"M": 1000, "N": 1025}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, a, b):
        return a * x + b


def get_inputs():
    return [torch.randn(M, N), torch.randn(M, 1), torch.randn(N)]


def get_init_inputs():
    return []
