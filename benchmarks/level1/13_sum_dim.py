"""Sum over the middle dimension of a 3-D tensor (strided reduction)."""

import os

import torch
import torch.nn as nn

CATEGORY = "reduction"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, REDUCED, INNER = 32, 4096, 512  # 256 MB in, 64 KB per batch out
else:
    BATCH, REDUCED, INNER = 5, 123, 67

DIM = 1


class Model(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=self.dim)


def get_inputs():
    return [torch.randn(BATCH, REDUCED, INNER)]


def get_init_inputs():
    return [DIM]
