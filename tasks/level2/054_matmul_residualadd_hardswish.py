# Square matrix product a @ b (b is K x K), plus a itself (residual), then HardSwish.
import torch
import torch.nn as nn
import torch.nn.functional as F

KEVIN_FAMILY = "matmul"

M = 8192
K = 4096
KEVIN_CPU_SIZES = {"M": 256, "K": 320}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        x = torch.matmul(a, b)
        x = x + a
        return F.hardswish(x)


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, K) * K ** -0.5]


def get_init_inputs():
    return []
