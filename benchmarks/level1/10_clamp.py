"""Clamp every element into an asymmetric interval [low, high]."""

import os

import torch
import torch.nn as nn

CATEGORY = "elementwise"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    ROWS, COLS = 8192, 8192
else:
    ROWS, COLS = 1001, 255

LOW, HIGH = -0.7, 1.1


class Model(nn.Module):
    def __init__(self, low: float, high: float):
        super().__init__()
        self.low = low
        self.high = high

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.clamp(x, min=self.low, max=self.high)


def get_inputs():
    return [torch.randn(ROWS, COLS)]


def get_init_inputs():
    return [LOW, HIGH]
