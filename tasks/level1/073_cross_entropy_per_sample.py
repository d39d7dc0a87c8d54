# Cross-entropy per sample: out[i] = logsumexp(logits[i]) - logits[i, target[i]] for
# (BATCH, CLASSES) logits and int64 class targets (BATCH,) -> (BATCH,).
import torch
import torch.nn as nn
import torch.nn.functional as F

KEVIN_FAMILY = "loss"

BATCH = 65536
CLASSES = 1000
KEVIN_CPU_SIZES = {"BATCH": 1024, "CLASSES": 1000}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, logits, target):
        return F.cross_entropy(logits, target, reduction="none")


def get_inputs():
    logits = torch.randn(BATCH, CLASSES) * (torch.rand(BATCH, 1) * 4 + 0.5)
    target = torch.randint(0, CLASSES, (BATCH,))
    return [logits, target]


def get_init_inputs():
    return []
