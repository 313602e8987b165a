"""2-D average pooling, 3x3 window, stride 2, padding 1, padding excluded from the count."""

import os

import torch
import torch.nn as nn

CATEGORY = "pooling"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, CHANNELS, HEIGHT, WIDTH = 64, 64, 128, 128
else:
    BATCH, CHANNELS, HEIGHT, WIDTH = 2, 6, 33, 47


class Model(nn.Module):
    def __init__(self, kernel: int, stride: int, padding: int):
        super().__init__()
        # count_include_pad=False: border windows divide by the cells they cover.
        self.pool = nn.AvgPool2d(kernel, stride=stride, padding=padding, count_include_pad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH) + 0.5]


def get_init_inputs():
    return [3, 2, 1]
