"""Softmax over the last dimension of a 3-D tensor (rows of awkward length)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)


def get_inputs():
    return [torch.randn(3, 17, 333)]


def get_init_inputs():
    return []
