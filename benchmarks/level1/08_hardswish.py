"""Hard-swish (x * relu6(x + 3) / 6) applied elementwise."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "elementwise"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    ROWS, COLS = 8192, 8192
else:
    ROWS, COLS = 1023, 301


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.hardswish(x)


def get_inputs():
    # Spread wide enough that all three pieces (0, quadratic, identity) are hit.
    return [3.0 * torch.randn(ROWS, COLS)]


def get_init_inputs():
    return []
