# Masked prefix sum along the last dimension: only entries whose boolean mask is True
# contribute, out[i, j] = sum over k <= j with mask[i, k] of x[i, k].
import torch
import torch.nn as nn

KEVIN_FAMILY = "scan"

ROWS = 8192
L = 8192
KEVIN_CPU_SIZES = {"ROWS": 400, "L": 1500}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, mask):
        return torch.cumsum(x * mask, dim=-1)


def get_inputs():
    drift = (torch.rand(ROWS, 1) * 0.75 + 0.25) * torch.sign(torch.randn(ROWS, 1))
    x = torch.randn(ROWS, L) + drift
    mask = torch.rand(ROWS, L) < 0.6
    return [x, mask]


def get_init_inputs():
    return []
