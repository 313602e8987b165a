"""Logistic sigmoid applied elementwise to a matrix with a wide input range."""

import os

import torch
import torch.nn as nn

CATEGORY = "elementwise"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    ROWS, COLS = 16384, 4096
else:
    ROWS, COLS = 1000, 259


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(x)


def get_inputs():
    # Scaled so that both saturated tails (where exp overflows naively) are exercised.
    return [4.0 * torch.randn(ROWS, COLS)]


def get_init_inputs():
    return []
