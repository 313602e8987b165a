"""relu(x @ W^T + b) through nn.Linear: weights come from the seed."""
import torch
import torch.nn as nn

TOLERANCE = (1e-4, 1e-4)


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.linear(x))


def get_inputs():
    return [torch.randn(33, 40)]


def get_init_inputs():
    return [40, 24]
