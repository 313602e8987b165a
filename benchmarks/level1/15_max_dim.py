"""Maximum over the first dimension of a matrix (a column-wise reduction)."""

import os

import torch
import torch.nn as nn

CATEGORY = "reduction"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    ROWS, COLS = 8192, 8192
else:
    ROWS, COLS = 1023, 129


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.amax(x, dim=0)


def get_inputs():
    return [torch.randn(ROWS, COLS)]


def get_init_inputs():
    return []
