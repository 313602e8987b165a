"""Depthwise 2-D convolution (groups = channels), 3x3 kernel, same padding."""

import os

import torch
import torch.nn as nn

CATEGORY = "conv"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, CHANNELS, HEIGHT, WIDTH = 32, 128, 128, 128  # 256 MB in and out
else:
    BATCH, CHANNELS, HEIGHT, WIDTH = 2, 16, 45, 31

KERNEL = 3


class Model(nn.Module):
    def __init__(self, channels: int, kernel: int):
        super().__init__()
        self.conv = nn.Conv2d(
            channels, channels, kernel, padding=kernel // 2, groups=channels, bias=True
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS, KERNEL]
