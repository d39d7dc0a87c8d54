# Batched matrix product a (B x M x K) @ b (B x K x N); instance normalisation treating
# M as channels and N as length (no affine); ReLU; then sum over M (removed).
import torch
import torch.nn as nn

KEVIN_FAMILY = "matmul"

B = 32
M = 512
K = 1024
N = 1024
KEVIN_CPU_SIZES = {"B": 4, "M": 64, "K": 96, "N": 80}


class Model(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.norm = nn.InstanceNorm1d(m)

    def forward(self, a, b):
        x = torch.matmul(a, b)
        x = self.norm(x)
        x = torch.relu(x)
        return torch.sum(x, dim=1)


def get_inputs():
    return [torch.randn(B, M, K), torch.randn(B, K, N)]


def get_init_inputs():
    return [M]
