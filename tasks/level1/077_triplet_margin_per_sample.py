# Triplet margin loss per sample: max(d(a, p) - d(a, n) + margin, 0) with
# d(x, y) = ||x - y + eps||_2 (eps = 1e-6) along the last dimension -> (BATCH,).
import torch
import torch.nn as nn
import torch.nn.functional as F

KEVIN_FAMILY = "loss"

BATCH = 32768
D = 1024
KEVIN_CPU_SIZES = {"BATCH": 1600, "D": 256}


class Model(nn.Module):
    def __init__(self, margin):
        super().__init__()
        self.margin = margin

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_loss(anchor, positive, negative, margin=self.margin, p=2.0,
                                     eps=1e-6, reduction="none")


def get_inputs():
    anchor = torch.randn(BATCH, D)
    positive = anchor + torch.randn(BATCH, D) * (torch.rand(BATCH, 1) * 0.8 + 0.2)
    negative = anchor + torch.randn(BATCH, D) * (torch.rand(BATCH, 1) * 0.8 + 0.2)
    return [anchor, positive, negative]


def get_init_inputs():
    return [2.0]
