# Layer normalisation over the last dimension (nn.LayerNorm with elementwise affine):
# every row of length D is shifted to zero mean, scaled to unit (biased) variance,
# then multiplied by weight and shifted by bias. D = 1000 is not a power of two.
import torch
import torch.nn as nn

KEVIN_FAMILY = "norm"

BATCH = 32
S = 4096
D = 1000
KEVIN_CPU_SIZES = {"BATCH": 4, "S": 256, "D": 1000}


class Model(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.norm = nn.LayerNorm(dim, eps=eps)
        with torch.no_grad():
            self.norm.weight.uniform_(0.5, 1.5)
            self.norm.bias.uniform_(-0.5, 0.5)

    def forward(self, x):
        return self.norm(x)


def get_inputs():
    scale = torch.rand(BATCH, S, 1) * 3 + 0.5
    shift = torch.randn(BATCH, S, 1)
    return [torch.randn(BATCH, S, D) * scale + shift]


def get_init_inputs():
    return [D, 1e-5]
