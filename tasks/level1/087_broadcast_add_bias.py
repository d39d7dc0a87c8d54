# Broadcast addition of a bias vector to every row: out[i, j] = x[i, j] + bias[j]
# for x of shape (M, N) and bias of shape (N,), N odd.
import torch
import torch.nn as nn

KEVIN_FAMILY = "elementwise"

M = 12288
N = 8191
KEVIN_CPU_SIZES = {"M": 1000, "N": 1001}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, bias):
        return x + bias


def get_inputs():
    return [torch.randn(M, N), torch.randn(N)]


def get_init_inputs():
    return []
