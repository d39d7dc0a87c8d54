# L2 normalisation of rows: x / max(||x||_2, eps) along the last dimension of a
# (ROWS, D) matrix, with D = 250 (not a multiple of 32).
import torch
import torch.nn as nn
import torch.nn.functional as F

KEVIN_FAMILY = "norm"

ROWS = 393216
D = 250
KEVIN_CPU_SIZES = {"ROWS": 4001, "D": 250}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.normalize(x, p=2.0, dim=-1)


def get_inputs():
    return [torch.randn(ROWS, D) * (torch.rand(ROWS, 1) * 3 + 0.5)]


def get_init_inputs():
    return []
