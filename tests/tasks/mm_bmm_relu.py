import torch
import torch.nn as nn


class Model(nn.Module):
    """Batched matmul then ReLU."""

    def forward(self, a, b):
        return torch.relu(torch.bmm(a, b))


def get_inputs():
    return [torch.randn(3, 9, 21), torch.randn(3, 21, 13)]


def get_init_inputs():
    return []
