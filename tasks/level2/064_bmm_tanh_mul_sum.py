# Batched matrix product bmm(a, b), tanh, multiplication by a learned per-column weight,
# then sum over the last dimension (kept as size 1).
import torch
import torch.nn as nn

KEVIN_FAMILY = "bmm"

BATCH = 64
M = 1024
K = 512
N = 1024
KEVIN_CPU_SIZES = {"BATCH": 4, "M": 64, "K": 96, "N": 80}


class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n))

    def forward(self, a, b):
        x = torch.bmm(a, b)
        x = torch.tanh(x)
        x = x * self.weight
        return torch.sum(x, dim=-1, keepdim=True)


def get_inputs():
    return [torch.randn(BATCH, M, K), torch.randn(BATCH, K, N) * K ** -0.5]


def get_init_inputs():
    return [N]
