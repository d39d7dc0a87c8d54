# Cosine distance per row: out[i] = 1 - cos(a[i], b[i]) with cos = a.b / (||a|| * ||b||)
# along the last dimension (eps = 1e-8 only guards zero norms) -> (ROWS,).
# b is built correlated with a so the distances spread over (0, 2).
import torch
import torch.nn as nn
import torch.nn.functional as F

KEVIN_FAMILY = "loss"

ROWS = 65536
D = 1024
KEVIN_CPU_SIZES = {"ROWS": 2000, "D": 512}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return 1.0 - F.cosine_similarity(a, b, dim=-1, eps=1e-8)


def get_inputs():
    a = torch.randn(ROWS, D) * (torch.rand(ROWS, 1) * 3 + 0.5)
    mix = torch.rand(ROWS, 1) * 2 - 1
    b = a * mix + torch.randn(ROWS, D) * (torch.rand(ROWS, 1) * 2 + 0.3)
    return [a, b]


def get_init_inputs():
    return []
