import torch
import torch.nn as nn


class Model(nn.Module):
    """LayerNorm over the last two dims (normalized_shape of length 2)."""

    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm([4, 5])

    def forward(self, x):
        return self.ln(x)


def get_inputs():
    return [torch.randn(3, 4, 5)]


def get_init_inputs():
    return []
