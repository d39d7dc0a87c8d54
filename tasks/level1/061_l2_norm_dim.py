# Euclidean norm along the last dimension: out[i, j] = sqrt(sum_k x[i, j, k]^2) for a
# (BATCH, S, D) tensor -> (BATCH, S).
import torch
import torch.nn as nn

KEVIN_FAMILY = "reduction"

BATCH = 64
S = 2048
D = 1000
KEVIN_CPU_SIZES = {"BATCH": 8, "S": 128, "D": 1000}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.linalg.vector_norm(x, ord=2, dim=-1)


def get_inputs():
    return [torch.randn(BATCH, S, D) * (torch.rand(BATCH, S, 1) * 3 + 0.5)]


def get_init_inputs():
    return []
