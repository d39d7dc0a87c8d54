# Matrix-vector product y = A @ x with A of shape (M, K) and x a column of shape (K, 1).
# Memory bound: every element of A is read exactly once.
import torch
import torch.nn as nn

KEVIN_FAMILY = "matmul"

M = 16383
K = 12288
KEVIN_CPU_SIZES = {"M": 1501, "K": 1024}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, x):
        return torch.matmul(a, x)


def get_inputs():
    return [torch.randn(M, K) * K ** -0.5, torch.randn(K, 1)]


def get_init_inputs():
    return []
