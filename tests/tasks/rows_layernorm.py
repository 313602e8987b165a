import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.LayerNorm with affine parameters over the last dim of a 3-D input."""

    def __init__(self, features, eps=1e-5):
        super().__init__()
        self.norm = nn.LayerNorm(features, eps=eps)
        with torch.no_grad():
            self.norm.weight.add_(torch.randn(features) * 0.1)
            self.norm.bias.add_(torch.randn(features) * 0.1)

    def forward(self, x):
        return self.norm(x)


def get_inputs():
    return [torch.randn(2, 3, 33)]


def get_init_inputs():
    return [33]
