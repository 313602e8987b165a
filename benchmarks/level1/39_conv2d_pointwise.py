"""Pointwise (1x1) 2-D convolution without bias: a per-pixel channel mix."""

import os

import torch
import torch.nn as nn

CATEGORY = "conv"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, C_IN, C_OUT, HEIGHT, WIDTH = 32, 256, 512, 64, 64  # 69 GFLOP
else:
    BATCH, C_IN, C_OUT, HEIGHT, WIDTH = 2, 24, 40, 37, 19


class Model(nn.Module):
    def __init__(self, c_in: int, c_out: int):
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, kernel_size=1, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, C_IN, HEIGHT, WIDTH)]


def get_init_inputs():
    return [C_IN, C_OUT]
