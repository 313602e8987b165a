"""Pointwise chain on two matrices: (|x| + y) * scale - 1."""

import os

import torch
import torch.nn as nn

CATEGORY = "elementwise"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    ROWS, COLS = 8192, 8192  # two 256 MB inputs, one 256 MB output
else:
    ROWS, COLS = 1023, 129

SCALE = 0.75


class Model(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return (torch.abs(x) + y) * self.scale - 1.0


def get_inputs():
    return [torch.randn(ROWS, COLS), torch.randn(ROWS, COLS)]


def get_init_inputs():
    return [SCALE]
