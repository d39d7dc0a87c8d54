# Binary cross-entropy on logits per row: elementwise
# -(t * log(sigmoid(x)) + (1 - t) * log(1 - sigmoid(x))), computed stably, averaged over
# the last dimension -> (ROWS,). Targets are soft labels in [0, 1].
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

    def forward(self, logits, target):
        return F.binary_cross_entropy_with_logits(logits, target, reduction="none").mean(dim=1)


def get_inputs():
    logits = torch.randn(ROWS, D) * (torch.rand(ROWS, 1) * 4 + 0.5)
    target = torch.rand(ROWS, D)
    return [logits, target]


def get_init_inputs():
    return []
