"""Row softmax over 8192x4096 fp32."""
import torch
import torch.nn as nn

CATEGORY = "softmax"


class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)


def get_inputs():
    return [torch.randn(8192, 4096)]


def get_init_inputs():
    return []
