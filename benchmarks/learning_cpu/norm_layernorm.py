"""Layer normalisation over the last dimension with a learned affine transform."""

import os

import torch
import torch.nn as nn

CATEGORY = "normalization"
FAMILY = "normalization"  # the operator family the learning benchmark splits by
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    ROWS, HIDDEN = 16384, 4096
else:
    ROWS, HIDDEN = 96, 300  # the CPU interpreter's size: tens of programs per launch


class Model(nn.Module):
    def __init__(self, hidden: int):
        super().__init__()
        self.norm = nn.LayerNorm(hidden)
        with torch.no_grad():  # not the identity affine: a kernel that skips it must fail
            self.norm.weight.copy_(1.0 + 0.2 * torch.randn(hidden))
            self.norm.bias.copy_(0.2 * torch.randn(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


def get_inputs():
    return [2.0 * torch.randn(ROWS, HIDDEN) + 0.3]


def get_init_inputs():
    return [HIDDEN]
