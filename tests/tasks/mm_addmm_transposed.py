import torch
import torch.nn as nn


class Model(nn.Module):
    """addmm with beta/alpha, the right operand a transposed parameter."""

    def __init__(self, k, n):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n, k) * 0.1)
        self.bias = nn.Parameter(torch.randn(n))

    def forward(self, x):
        return torch.addmm(self.bias, x, self.weight.t(), beta=0.5, alpha=2.0)


def get_inputs():
    return [torch.randn(11, 20)]


def get_init_inputs():
    return [20, 15]
