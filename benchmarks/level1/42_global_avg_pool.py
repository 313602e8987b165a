"""Global average pooling: mean over H and W of an NCHW tensor, output (N, C)."""

import os

import torch
import torch.nn as nn

CATEGORY = "pooling"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, CHANNELS, HEIGHT, WIDTH = 64, 512, 56, 56  # 411 MB in
else:
    BATCH, CHANNELS, HEIGHT, WIDTH = 3, 17, 13, 11


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2d(1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.flatten(self.pool(x), start_dim=1)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH) + 1.0]


def get_init_inputs():
    return []
