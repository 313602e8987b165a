"""Smooth L1 (Huber-style) loss with beta = 0.5, averaged over each row."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "loss"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    ROWS, COLS = 8192, 8192
else:
    ROWS, COLS = 1023, 199

BETA = 0.5


class Model(nn.Module):
    def __init__(self, beta: float):
        super().__init__()
        self.beta = beta

    def forward(self, prediction: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        # Per-row means, not one scalar: see 43_mse_loss.py.
        return F.smooth_l1_loss(prediction, target, reduction="none", beta=self.beta).mean(dim=-1)


def get_inputs():
    # Differences straddle beta, so both the quadratic and linear branches count.
    return [torch.randn(ROWS, COLS), torch.randn(ROWS, COLS) * 0.3]


def get_init_inputs():
    return [BETA]
