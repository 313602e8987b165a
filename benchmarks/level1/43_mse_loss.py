"""Mean squared error between prediction and target rows, one loss per row."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "loss"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    ROWS, COLS = 8192, 8192
else:
    ROWS, COLS = 1000, 257


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, prediction: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        # Per-row means: a mean over all 67M elements at full size moves by less
        # than the tolerance when the target is redrawn, so a kernel could skip it.
        return F.mse_loss(prediction, target, reduction="none").mean(dim=-1)


def get_inputs():
    return [torch.randn(ROWS, COLS), torch.randn(ROWS, COLS) * 0.5 + 0.1]


def get_init_inputs():
    return []
