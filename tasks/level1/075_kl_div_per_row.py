# KL divergence per row between two categorical distributions given as logits:
# out[i] = sum_j q[i, j] * (log q[i, j] - log p[i, j]) with p = softmax(p_logits),
# q = softmax(q_logits) along the last dimension -> (ROWS,).
import torch
import torch.nn as nn
import torch.nn.functional as F

KEVIN_FAMILY = "loss"

ROWS = 16384
D = 4096
KEVIN_CPU_SIZES = {"ROWS": 512, "D": 1001}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, p_logits, q_logits):
        log_p = F.log_softmax(p_logits, dim=-1)
        log_q = F.log_softmax(q_logits, dim=-1)
        return F.kl_div(log_p, log_q, reduction="none", log_target=True).sum(dim=-1)


def get_inputs():
    p_logits = torch.randn(ROWS, D) * (torch.rand(ROWS, 1) * 2 + 0.2)
    q_logits = torch.randn(ROWS, D) * (torch.rand(ROWS, 1) * 2 + 0.2)
    return [p_logits, q_logits]


def get_init_inputs():
    return []
