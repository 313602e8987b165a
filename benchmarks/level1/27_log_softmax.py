"""Log-softmax over the last dimension of a matrix."""

import os

import torch
import torch.nn as nn

CATEGORY = "softmax"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    ROWS, COLS = 8192, 8192
else:
    ROWS, COLS = 777, 1000


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log_softmax(x, dim=-1)


def get_inputs():
    return [2.0 * torch.randn(ROWS, COLS)]


def get_init_inputs():
    return []
