# Batched matrix product: for every b, C[b] = A[b] @ B[b],
# with A of shape (BATCH, M, K) and B of shape (BATCH, K, N).
import torch
import torch.nn as nn

KEVIN_FAMILY = "matmul"

BATCH = 32
M = 1024
K = 768
N = 896
KEVIN_CPU_SIZES = {"BATCH": 4, "M": 128, "K": 96, "N": 112}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.bmm(a, b)


def get_inputs():
    s = K ** -0.25
    return [torch.randn(BATCH, M, K) * s, torch.randn(BATCH, K, N) * s]


def get_init_inputs():
    return []
