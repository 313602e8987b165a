"""Absolute value of one input plus half of another, elementwise."""

import os

import torch
import torch.nn as nn

CATEGORY = "elementwise"
FAMILY = "pointwise"  # the operator family the learning benchmark splits by
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    ROWS, COLS = 8192, 4096
else:
    ROWS, COLS = 56, 800  # the CPU interpreter's size: tens of programs per launch


class Model(nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.abs(x) + 0.5 * y


def get_inputs():
    return [torch.randn(ROWS, COLS), torch.randn(ROWS, COLS)]


def get_init_inputs():
    return []
