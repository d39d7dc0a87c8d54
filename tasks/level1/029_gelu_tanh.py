# GELU activation with the tanh approximation:
# out = 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))), on a 3D tensor.
import torch
import torch.nn as nn
import torch.nn.functional as F

KEVIN_FAMILY = "activation"

B = 96
S = 1024
D = 1024
KEVIN_CPU_SIZES = {"B": 4, "S": 256, "D": 512}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.gelu(x, approximate="tanh")


def get_inputs():
    return [torch.randn(B, S, D) * 1.5]


def get_init_inputs():
    return []
