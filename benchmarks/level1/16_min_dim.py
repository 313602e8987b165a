"""Minimum (values only) over the middle dimension of a 3-D tensor."""

import os

import torch
import torch.nn as nn

CATEGORY = "reduction"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, REDUCED, INNER = 16, 2048, 2048
else:
    BATCH, REDUCED, INNER = 3, 500, 37


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.min(x, dim=1).values


def get_inputs():
    return [torch.randn(BATCH, REDUCED, INNER)]


def get_init_inputs():
    return []
