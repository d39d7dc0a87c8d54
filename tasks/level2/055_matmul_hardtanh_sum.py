# Matrix product a @ b, Hardtanh to [-1, 1], then sum over the rows (dimension 0):
# one value per output column.
import torch
import torch.nn as nn
import torch.nn.functional as F

KEVIN_FAMILY = "matmul"

M = 4096
K = 4096
N = 8192
KEVIN_CPU_SIZES = {"M": 256, "K": 320, "N": 288}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        x = torch.matmul(a, b)
        x = F.hardtanh(x)
        return torch.sum(x, dim=0)


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N) * (2.0 * K ** -0.5)]


def get_init_inputs():
    return []
