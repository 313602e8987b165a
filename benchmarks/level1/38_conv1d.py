"""1-D convolution over a long sequence, kernel 5, same padding, with bias."""

import os

import torch
import torch.nn as nn

CATEGORY = "conv"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, C_IN, C_OUT, LENGTH = 32, 128, 256, 8192  # 86 GFLOP
else:
    BATCH, C_IN, C_OUT, LENGTH = 3, 12, 20, 1000

KERNEL = 5


class Model(nn.Module):
    def __init__(self, c_in: int, c_out: int, kernel: int):
        super().__init__()
        self.conv = nn.Conv1d(c_in, c_out, kernel, padding=kernel // 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, C_IN, LENGTH)]


def get_init_inputs():
    return [C_IN, C_OUT, KERNEL]
