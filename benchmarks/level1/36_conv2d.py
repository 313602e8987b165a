"""2-D convolution, 3x3 kernel, stride 1, same padding, with bias (NCHW)."""

import os

import torch
import torch.nn as nn

CATEGORY = "conv"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, C_IN, C_OUT, HEIGHT, WIDTH = 16, 64, 128, 128, 128  # 39 GFLOP
else:
    BATCH, C_IN, C_OUT, HEIGHT, WIDTH = 2, 8, 16, 37, 41

KERNEL = 3


class Model(nn.Module):
    def __init__(self, c_in: int, c_out: int, kernel: int):
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, kernel, stride=1, padding=kernel // 2, bias=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, C_IN, HEIGHT, WIDTH)]


def get_init_inputs():
    return [C_IN, C_OUT, KERNEL]
