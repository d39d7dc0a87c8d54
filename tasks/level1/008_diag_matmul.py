# Left multiplication by a diagonal matrix: out = diag(d) @ B, with d a vector of
# length N and B of shape (N, M). Written naively as a dense N x N matrix product.
import torch
import torch.nn as nn

KEVIN_FAMILY = "matmul"

N = 4096
M = 8192
KEVIN_CPU_SIZES = {"N": 192, "M": 256}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, d, b):
        return torch.diag(d) @ b


def get_inputs():
    return [torch.randn(N), torch.randn(N, M)]


def get_init_inputs():
    return []
