# Softmax with temperature over the last dimension: softmax(x / temperature), where the
# temperature is a python float passed to forward at call time.
import torch
import torch.nn as nn

KEVIN_FAMILY = "softmax"

ROWS = 16384
D = 4000
KEVIN_CPU_SIZES = {"ROWS": 512, "D": 1000}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, temperature):
        return torch.softmax(x / temperature, dim=-1)


def get_inputs():
    scale = torch.rand(ROWS, 1) * 40 + 1
    shift = torch.rand(ROWS, 1) * 200 - 100
    return [torch.randn(ROWS, D) * scale + shift, 2.5]


def get_init_inputs():
    return []
