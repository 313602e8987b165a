"""SiLU (x * sigmoid(x)) applied elementwise to a 3-D activation tensor."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "elementwise"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, TOKENS, HIDDEN = 16, 2048, 2048  # 256 MB
else:
    BATCH, TOKENS, HIDDEN = 3, 129, 515


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.silu(x)


def get_inputs():
    return [torch.randn(BATCH, TOKENS, HIDDEN)]


def get_init_inputs():
    return []
