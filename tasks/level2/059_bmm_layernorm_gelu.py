# Batched matrix product bmm(a, b), layer normalisation over the last dimension (learned
# affine), then GELU.
import torch
import torch.nn as nn
import torch.nn.functional as F

KEVIN_FAMILY = "bmm"

BATCH = 32
M = 1024
K = 512
N = 1024
KEVIN_CPU_SIZES = {"BATCH": 4, "M": 64, "K": 96, "N": 80}


class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.norm = nn.LayerNorm(n)

    def forward(self, a, b):
        x = torch.bmm(a, b)
        x = self.norm(x)
        return F.gelu(x)


def get_inputs():
    return [torch.randn(BATCH, M, K), torch.randn(BATCH, K, N) * K ** -0.5]


def get_init_inputs():
    return [N]
