# Softsign activation: out = x / (1 + |x|), elementwise, on a (M, N) matrix with an
# odd number of rows.
import torch
import torch.nn as nn
import torch.nn.functional as F

KEVIN_FAMILY = "activation"

M = 12289
N = 8192
KEVIN_CPU_SIZES = {"M": 1001, "N": 1024}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.softsign(x)


def get_inputs():
    return [torch.randn(M, N) * 3.0]


def get_init_inputs():
    return []
