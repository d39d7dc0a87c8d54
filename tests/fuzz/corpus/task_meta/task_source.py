# a task
import torch

KEVIN_FAMILY = "activation"
KEVIN_FAMILY_X = 1

class Model(torch.nn.Module):
    pass
