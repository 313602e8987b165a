import torch
import torch.nn as nn


class Model(nn.Module):
    """Broadcast of (3,1,17) against (5,17), a runtime scalar, several ops."""

    def __init__(self):
        super().__init__()

    def forward(self, a, b, alpha):
        y = torch.maximum(a, b) * alpha - torch.sigmoid(b).exp()
        y = torch.clamp(y, min=-2.0, max=3.0) + torch.nn.functional.leaky_relu(a, 0.2)
        return torch.where(y > 0, y, y * 0.1) / (1.0 + b.abs())


def get_inputs():
    return [torch.randn(3, 1, 17), torch.randn(5, 17), 0.75]


def get_init_inputs():
    return []
