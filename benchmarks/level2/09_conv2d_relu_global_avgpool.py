"""3x3 convolution, ReLU, then global average pooling to (N, C)."""

import os

import torch
import torch.nn as nn

CATEGORY = "fusion"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, C_IN, C_OUT, HEIGHT, WIDTH = 32, 64, 128, 112, 112
else:
    BATCH, C_IN, C_OUT, HEIGHT, WIDTH = 3, 5, 16, 31, 23


class Model(nn.Module):
    def __init__(self, c_in: int, c_out: int):
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.conv(x)).mean(dim=(2, 3))


def get_inputs():
    return [torch.randn(BATCH, C_IN, HEIGHT, WIDTH)]


def get_init_inputs():
    return [C_IN, C_OUT]
