"""relu(x + y) * 2: an elementwise chain for executor tests."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, y):
        return torch.relu(x + y) * 2.0


def get_inputs():
    return [torch.randn(37, 1000), torch.randn(37, 1000)]


def get_init_inputs():
    return []
