"""Suffix sum (cumulative sum from the end) along the last dimension."""

import os

import torch
import torch.nn as nn

CATEGORY = "scan"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    ROWS, COLS = 16384, 4096
else:
    ROWS, COLS = 999, 300


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.flip(torch.cumsum(torch.flip(x, dims=[-1]), dim=-1), dims=[-1])


def get_inputs():
    return [torch.randn(ROWS, COLS) + 0.1]


def get_init_inputs():
    return []
