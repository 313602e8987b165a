import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """x + bias, exact GELU, times a constant."""

    def __init__(self, features):
        super(Model, self).__init__()
        self.bias = nn.Parameter(torch.randn(features))

    def forward(self, x):
        return F.gelu(x + self.bias) * 0.5


def get_inputs():
    return [torch.randn(4, 37)]


def get_init_inputs():
    return [37]
