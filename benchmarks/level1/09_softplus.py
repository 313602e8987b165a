"""Softplus with beta and a linearisation threshold, applied elementwise."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "elementwise"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    ROWS, COLS = 8192, 8192
else:
    ROWS, COLS = 999, 257

BETA = 2.0
THRESHOLD = 10.0


class Model(nn.Module):
    def __init__(self, beta: float, threshold: float):
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.softplus(x, beta=self.beta, threshold=self.threshold)


def get_inputs():
    # beta * |x| exceeds the threshold for about a fifth of the elements.
    return [4.0 * torch.randn(ROWS, COLS)]


def get_init_inputs():
    return [BETA, THRESHOLD]
