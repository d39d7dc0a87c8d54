# Matrix product a @ b, layer normalisation over the last dimension (learned affine),
# then Mish.
import torch
import torch.nn as nn
import torch.nn.functional as F

KEVIN_FAMILY = "matmul"

M = 4096
K = 8192
N = 4096
KEVIN_CPU_SIZES = {"M": 256, "K": 320, "N": 288}


class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.norm = nn.LayerNorm(n)

    def forward(self, a, b):
        x = torch.matmul(a, b)
        x = self.norm(x)
        return F.mish(x)


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N) * K ** -0.5]


def get_init_inputs():
    return [N]
