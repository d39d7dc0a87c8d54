# Batched matrix product bmm(a, b), SiLU, maximum over the M dimension (removed; output
# BATCH x N), then Softplus.
import torch
import torch.nn as nn
import torch.nn.functional as F

KEVIN_FAMILY = "bmm"

BATCH = 32
M = 1024
K = 1024
N = 1024
KEVIN_CPU_SIZES = {"BATCH": 4, "M": 64, "K": 96, "N": 80}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        x = torch.bmm(a, b)
        x = F.silu(x)
        x = torch.amax(x, dim=1)
        return F.softplus(x)


def get_inputs():
    a = torch.randn(BATCH, M, K) * (torch.rand(BATCH, 1, 1) * 2.0 + 0.5)
    return [a, torch.randn(BATCH, K, N) * K ** -0.5]


def get_init_inputs():
    return []
