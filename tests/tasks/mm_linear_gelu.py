import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.Linear followed by GELU, on a 3-D input."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.act = nn.GELU()

    def forward(self, x):
        return self.act(self.fc(x))


def get_inputs():
    return [torch.randn(2, 5, 37)]


def get_init_inputs():
    return [37, 29]
