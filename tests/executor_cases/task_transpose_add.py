"""x^T + y: the candidate may take views of its inputs."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, y):
        return x.t() + y


def get_inputs():
    return [torch.randn(70, 50), torch.randn(50, 70)]


def get_init_inputs():
    return []
