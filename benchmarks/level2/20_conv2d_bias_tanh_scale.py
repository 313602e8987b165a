"""Convolution without bias, add a per-channel bias, tanh, then scale by a constant."""

import os

import torch
import torch.nn as nn

CATEGORY = "fusion"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, C_IN, C_OUT, HEIGHT, WIDTH = 16, 64, 128, 128, 128
else:
    BATCH, C_IN, C_OUT, HEIGHT, WIDTH = 2, 7, 9, 30, 37


class Model(nn.Module):
    def __init__(self, c_in: int, c_out: int, scale: float):
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, 3, padding=1, bias=False)
        self.bias = nn.Parameter(0.5 * torch.randn(c_out, 1, 1))
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.conv(x) + self.bias) * self.scale


def get_inputs():
    return [torch.randn(BATCH, C_IN, HEIGHT, WIDTH)]


def get_init_inputs():
    return [C_IN, C_OUT, 1.7]
