# Batched matrix product bmm(a, b), addition of a learned per-column bias, tanh, then 1-D
# max pooling with window 4 (stride 4) along the last dimension.
import torch
import torch.nn as nn

KEVIN_FAMILY = "bmm"

BATCH = 64
M = 512
K = 1024
N = 1024
KEVIN_CPU_SIZES = {"BATCH": 4, "M": 64, "K": 96, "N": 80}


class Model(nn.Module):
    def __init__(self, n, pool):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(n) * 0.5)
        self.pool = nn.MaxPool1d(pool)

    def forward(self, a, b):
        x = torch.bmm(a, b)
        x = x + self.bias
        x = torch.tanh(x)
        return self.pool(x)


def get_inputs():
    return [torch.randn(BATCH, M, K), torch.randn(BATCH, K, N) * (2.0 * K ** -0.5)]


def get_init_inputs():
    return [N, 4]
