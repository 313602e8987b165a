"""relu((x @ W^T + b - 2) * 1.5) on torch.rand inputs: KernelBench level2/9's shape of problem, small.

On its own inputs every output is zero (x @ W^T + b stays far below 2), so a
kernel computing x @ W instead of x @ W^T matches it: the task is degenerate
there, and only inputs from another distribution tell the two apart.
"""
import torch
import torch.nn as nn

batch_size = 16
features = 64


class Model(nn.Module):
    def __init__(self, in_features, out_features, subtract_value, multiply_value):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.subtract_value = subtract_value
        self.multiply_value = multiply_value

    def forward(self, x):
        x = self.linear(x)
        x = x - self.subtract_value
        x = x * self.multiply_value
        return torch.relu(x)


def get_inputs():
    return [torch.rand(batch_size, features)]


def get_init_inputs():
    return [features, features, 2.0, 1.5]
