# Matrix product a @ b, addition of a learned per-column bias, Softplus, then mean over
# the columns of each row (kept as size 1). Rows of a have varied scales.
import torch
import torch.nn as nn
import torch.nn.functional as F

KEVIN_FAMILY = "matmul"

M = 8192
K = 4096
N = 4096
KEVIN_CPU_SIZES = {"M": 256, "K": 320, "N": 288}


class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(n))

    def forward(self, a, b):
        x = torch.matmul(a, b)
        x = x + self.bias
        x = F.softplus(x)
        return torch.mean(x, dim=1, keepdim=True)


def get_inputs():
    a = torch.randn(M, K) * (torch.rand(M, 1) * 3.0 + 0.5)
    return [a, torch.randn(K, N) * K ** -0.5]


def get_init_inputs():
    return [N]
