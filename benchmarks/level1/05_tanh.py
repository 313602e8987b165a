"""Hyperbolic tangent applied elementwise to a flat vector."""

import os

import torch
import torch.nn as nn

CATEGORY = "elementwise"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    NUMEL = 64 * 1024 * 1024  # 256 MB, one long 1-D tensor
else:
    NUMEL = 300_007


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(x)


def get_inputs():
    return [2.0 * torch.randn(NUMEL)]


def get_init_inputs():
    return []
