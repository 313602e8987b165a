"""Scale, shift and clamp, elementwise."""

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
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.clamp(x * 2.0 - 1.0, -0.5, 0.5)


def get_inputs():
    return [torch.randn(ROWS, COLS)]


def get_init_inputs():
    return []
