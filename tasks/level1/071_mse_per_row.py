# Mean squared error per row: out[i] = mean_j (pred[i, j] - target[i, j])^2 for two
# (ROWS, D) matrices -> (ROWS,). Rows have different spreads.
import torch
import torch.nn as nn
import torch.nn.functional as F

KEVIN_FAMILY = "loss"

ROWS = 16384
D = 4096
KEVIN_CPU_SIZES = {"ROWS": 1024, "D": 1000}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, pred, target):
        return F.mse_loss(pred, target, reduction="none").mean(dim=1)


def get_inputs():
    pred = torch.randn(ROWS, D) * (torch.rand(ROWS, 1) * 3 + 0.5)
    target = torch.randn(ROWS, D) * (torch.rand(ROWS, 1) * 2 + 0.2)
    return [pred, target]


def get_init_inputs():
    return []
