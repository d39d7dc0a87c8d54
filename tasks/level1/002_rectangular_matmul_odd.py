# Rectangular matrix product C = A @ B with A of shape (M, K) and B of shape (K, N),
# where none of M, K, N is a multiple of 32 (edge tiles everywhere).
import torch
import torch.nn as nn

KEVIN_FAMILY = "matmul"

M = 2999
K = 4097
N = 2053
KEVIN_CPU_SIZES = {"M": 197, "K": 261, "N": 151}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.matmul(a, b)


def get_inputs():
    s = K ** -0.25
    return [torch.randn(M, K) * s, torch.randn(K, N) * s]


def get_init_inputs():
    return []
