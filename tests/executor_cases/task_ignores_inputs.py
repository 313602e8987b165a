"""The output does not depend on the input's values: no input distribution makes it testable."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, y):
        return torch.relu(x + y) * 0.0 + 2.0


def get_inputs():
    return [torch.randn(37, 1000), torch.randn(37, 1000)]


def get_init_inputs():
    return []
