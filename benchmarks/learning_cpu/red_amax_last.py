"""Maximum over the last dimension."""

import os

import torch
import torch.nn as nn

CATEGORY = "reduction"
FAMILY = "reduction"  # the operator family the learning benchmark splits by
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    ROWS, COLS = 16384, 4096
else:
    ROWS, COLS = 96, 300  # the CPU interpreter's size: tens of programs per launch


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.amax(dim=-1)


def get_inputs():
    return [torch.randn(ROWS, COLS)]


def get_init_inputs():
    return []
