# Batch normalisation of a (BATCH, FEATURES) matrix with training-mode statistics: each
# feature column is normalised by its own mean and biased variance over the batch, then
# scaled and shifted by learned per-feature weight and bias.
import torch
import torch.nn as nn
import torch.nn.functional as F

KEVIN_FAMILY = "norm"

BATCH = 65536
FEATURES = 1536
KEVIN_CPU_SIZES = {"BATCH": 4096, "FEATURES": 256}


class Model(nn.Module):
    def __init__(self, features, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.rand(features) + 0.5)
        self.bias = nn.Parameter(torch.randn(features) * 0.5)

    def forward(self, x):
        return F.batch_norm(x, None, None, self.weight, self.bias, training=True,
                            momentum=0.0, eps=self.eps)


def get_inputs():
    scale = torch.rand(1, FEATURES) * 3 + 0.5
    shift = torch.randn(1, FEATURES) * 2
    return [torch.randn(BATCH, FEATURES) * scale + shift]


def get_init_inputs():
    return [FEATURES, 1e-5]
