"""Elementwise chain with broadcasting: relu(x + bias) * scale, bias shared by all rows."""

import os

import torch
import torch.nn as nn

CATEGORY = "elementwise"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    ROWS, COLS = 8192, 8192  # 256 MB in and out: well past the H200's 60 MB L2
else:
    ROWS, COLS = 255, 257  # awkward sizes that catch missing bounds masks

SCALE = 1.5


class Model(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        return torch.relu(x + bias) * self.scale


def get_inputs():
    return [torch.randn(ROWS, COLS), torch.randn(COLS)]


def get_init_inputs():
    return [SCALE]
