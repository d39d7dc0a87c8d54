# Softplus with beta and threshold: out = log(1 + exp(beta * x)) / beta, except
# out = x where beta * x > threshold. Inputs are wide enough to hit both branches.
import torch
import torch.nn as nn

KEVIN_FAMILY = "activation"

M = 24576
N = 4096
KEVIN_CPU_SIZES = {"M": 1024, "N": 768}


class Model(nn.Module):
    def __init__(self, beta, threshold):
        super().__init__()
        self.act = nn.Softplus(beta=beta, threshold=threshold)

    def forward(self, x):
        return self.act(x)


def get_inputs():
    return [torch.randn(M, N) * 4.0]


def get_init_inputs():
    return [2.0, 10.0]
