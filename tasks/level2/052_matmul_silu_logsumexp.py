# Matrix product a @ b, SiLU, then log-sum-exp over the columns of each row (kept as
# size 1). Rows of a have varied scales.
import torch
import torch.nn as nn
import torch.nn.functional as F

KEVIN_FAMILY = "matmul"

M = 8192
K = 4096
N = 4096
KEVIN_CPU_SIZES = {"M": 256, "K": 320, "N": 288}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        x = torch.matmul(a, b)
        x = F.silu(x)
        return torch.logsumexp(x, dim=1, keepdim=True)


def get_inputs():
    a = torch.randn(M, K) * (torch.rand(M, 1) * 1.5 + 0.25)
    return [a, torch.randn(K, N) * K ** -0.5]


def get_init_inputs():
    return []
