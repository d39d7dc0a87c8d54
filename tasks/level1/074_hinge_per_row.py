# Hinge loss per row: out[i] = mean_j max(0, margin - y[i, j] * score[i, j]), with labels
# y in {-1, +1} given as float32 and the margin as an init argument -> (ROWS,).
import torch
import torch.nn as nn

KEVIN_FAMILY = "loss"

ROWS = 16384
D = 4096
KEVIN_CPU_SIZES = {"ROWS": 1024, "D": 1024}


class Model(nn.Module):
    def __init__(self, margin):
        super().__init__()
        self.margin = margin

    def forward(self, score, y):
        return torch.clamp(self.margin - y * score, min=0.0).mean(dim=1)


def get_inputs():
    score = torch.randn(ROWS, D) * (torch.rand(ROWS, 1) * 3 + 0.2)
    y = torch.randint(0, 2, (ROWS, D)).float() * 2 - 1
    return [score, y]


def get_init_inputs():
    return [1.0]
