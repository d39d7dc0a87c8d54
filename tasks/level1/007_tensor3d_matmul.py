# Product of a 3D tensor with a shared matrix: out[b] = X[b] @ W for every b,
# X of shape (BATCH, S, K) and W of shape (K, N); out has shape (BATCH, S, N).
import torch
import torch.nn as nn

KEVIN_FAMILY = "matmul"

BATCH = 8
S = 2048
K = 1024
N = 1536
KEVIN_CPU_SIZES = {"BATCH": 4, "S": 96, "K": 80, "N": 112}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, w):
        return torch.matmul(x, w)


def get_inputs():
    s = K ** -0.25
    return [torch.randn(BATCH, S, K) * s, torch.randn(K, N) * s]


def get_init_inputs():
    return []
