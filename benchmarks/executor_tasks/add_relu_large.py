"""relu(x + y) * 2 on 8192x8192 fp32 (256 MiB per tensor): memory-bound."""
import torch
import torch.nn as nn

CATEGORY = "elementwise"


class Model(nn.Module):
    def forward(self, x, y):
        return torch.relu(x + y) * 2.0


def get_inputs():
    return [torch.randn(8192, 8192), torch.randn(8192, 8192)]


def get_init_inputs():
    return []
