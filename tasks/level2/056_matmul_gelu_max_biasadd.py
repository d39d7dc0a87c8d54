# Batched-by-broadcast matrix product of a (B x M x K) with a shared b (K x N), GELU,
# maximum over the M dimension (removed), then addition of a learned per-column bias.
import torch
import torch.nn as nn
import torch.nn.functional as F

KEVIN_FAMILY = "matmul"

B = 16
M = 1024
K = 1024
N = 2048
KEVIN_CPU_SIZES = {"B": 4, "M": 64, "K": 96, "N": 80}


class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(n))

    def forward(self, a, b):
        x = torch.matmul(a, b)
        x = F.gelu(x)
        x = torch.amax(x, dim=1)
        return x + self.bias


def get_inputs():
    return [torch.randn(B, M, K), torch.randn(K, N) * K ** -0.5]


def get_init_inputs():
    return [N]
