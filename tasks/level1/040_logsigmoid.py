# Log-sigmoid activation: out = log(sigmoid(x)) = -softplus(-x), computed stably for
# large negative inputs.
import torch
import torch.nn as nn
import torch.nn.functional as F

KEVIN_FAMILY = "activation"

M = 16384
N = 6144
KEVIN_CPU_SIZES = {"M": 1000, "N": 1000}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.logsigmoid(x)


def get_inputs():
    return [torch.randn(M, N) * 6.0]


def get_init_inputs():
    return []
