import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """F.layer_norm, GELU, residual add: prologue-free norm with a fused epilogue."""

    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(dim))
        self.bias = nn.Parameter(torch.randn(dim))

    def forward(self, x, residual):
        y = F.layer_norm(x, (x.shape[-1],), self.weight, self.bias, 1e-5)
        return F.gelu(y) + residual


def get_inputs():
    return [torch.randn(5, 40), torch.randn(5, 40)]


def get_init_inputs():
    return [40]
