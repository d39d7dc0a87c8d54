# Batched matrix product bmm(a, b), multiplication by a constant, softmax over the last
# dimension, multiplication by a learned per-column value, then sum over the last
# dimension: a softmax-weighted average of the values (output BATCH x M).
import torch
import torch.nn as nn

KEVIN_FAMILY = "bmm"

BATCH = 32
M = 1024
K = 1024
N = 1024
KEVIN_CPU_SIZES = {"BATCH": 4, "M": 64, "K": 96, "N": 80}


class Model(nn.Module):
    def __init__(self, n, scale):
        super().__init__()
        self.scale = scale
        self.values = nn.Parameter(torch.randn(n))

    def forward(self, a, b):
        x = torch.bmm(a, b)
        x = x * self.scale
        x = torch.softmax(x, dim=-1)
        x = x * self.values
        return torch.sum(x, dim=-1)


def get_inputs():
    return [torch.randn(BATCH, M, K), torch.randn(BATCH, K, N) * K ** -0.5]


def get_init_inputs():
    return [N, 2.0]
