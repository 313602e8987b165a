"""GELU then an affine scale, elementwise."""

import os

import torch
import torch.nn as nn

CATEGORY = "elementwise"
FAMILY = "activation"  # the operator family the learning benchmark splits by
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    ROWS, COLS = 8192, 4096
else:
    ROWS, COLS = 64, 700  # the CPU interpreter's size: tens of programs per launch


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.gelu(x) * 0.5 + 0.1


def get_inputs():
    return [torch.randn(ROWS, COLS)]


def get_init_inputs():
    return []
