"""Leaky ReLU with a configurable negative slope, applied elementwise."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "elementwise"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    ROWS, COLS = 8192, 8192
else:
    ROWS, COLS = 777, 513

NEGATIVE_SLOPE = 0.05


class Model(nn.Module):
    def __init__(self, negative_slope: float):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.leaky_relu(x, negative_slope=self.negative_slope)


def get_inputs():
    return [torch.randn(ROWS, COLS)]


def get_init_inputs():
    return [NEGATIVE_SLOPE]
