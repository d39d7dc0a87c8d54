# Clamp with tensor bounds: out = min(max(x, lo), hi) elementwise, with a per-row lower
# bound lo of shape (M, 1) and a per-column upper bound hi of shape (1, N); where
# lo > hi the result is hi (torch.clamp semantics).
import torch
import torch.nn as nn

KEVIN_FAMILY = "elementwise"

M = 10240
N = 10000
KEVIN_CPU_SIZES = {"M": 1000, "N": 1001}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, lo, hi):
        return torch.clamp(x, min=lo, max=hi)


def get_inputs():
    x = torch.randn(M, N) * 2
    lo = -torch.rand(M, 1) * 1.5
    hi = torch.rand(1, N) * 1.5 - 0.25
    return [x, lo, hi]


def get_init_inputs():
    return []
