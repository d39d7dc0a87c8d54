# Matrix product a @ b of two inputs, multiplication by a constant, tanh, then addition
# of a learned per-column bias.
import torch
import torch.nn as nn

KEVIN_FAMILY = "matmul"

M = 4096
K = 4096
N = 4096
KEVIN_CPU_SIZES = {"M": 256, "K": 320, "N": 288}


class Model(nn.Module):
    def __init__(self, n, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(torch.randn(n) * 0.5)

    def forward(self, a, b):
        x = torch.matmul(a, b)
        x = x * self.scale
        x = torch.tanh(x)
        return x + self.bias


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return [N, 0.02]
