# Batched matrix product bmm(a, b), division by a constant, HardSwish, then group
# normalisation treating M as the channel dimension (groups of consecutive rows).
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
    def __init__(self, m, num_groups, divisor):
        super().__init__()
        self.divisor = divisor
        self.norm = nn.GroupNorm(num_groups, m)

    def forward(self, a, b):
        x = torch.bmm(a, b)
        x = x / self.divisor
        x = F.hardswish(x)
        return self.norm(x)


def get_inputs():
    return [torch.randn(BATCH, M, K), torch.randn(BATCH, K, N) * K ** -0.5]


def get_init_inputs():
    return [M, 8, 0.5]
