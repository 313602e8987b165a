"""SiLU of one input times another, elementwise (a gated unit)."""

import os

import torch
import torch.nn as nn

CATEGORY = "elementwise"
FAMILY = "activation"  # the operator family the learning benchmark splits by
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    ROWS, COLS = 8192, 4096
else:
    ROWS, COLS = 48, 900  # the CPU interpreter's size: tens of programs per launch


class Model(nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.silu(x) * y


def get_inputs():
    return [torch.randn(ROWS, COLS), torch.randn(ROWS, COLS)]


def get_init_inputs():
    return []
