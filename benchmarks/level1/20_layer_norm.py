"""Layer normalisation over the last dimension with a learned affine transform."""

import os

import torch
import torch.nn as nn

CATEGORY = "normalization"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    ROWS, HIDDEN = 16384, 4096  # 256 MB
else:
    ROWS, HIDDEN = 1000, 257

EPS = 1e-5


class Model(nn.Module):
    def __init__(self, hidden: int, eps: float):
        super().__init__()
        self.norm = nn.LayerNorm(hidden, eps=eps)
        # nn.LayerNorm starts at weight=1, bias=0; random values make a kernel
        # that skips the affine step fail instead of pass.
        with torch.no_grad():
            self.norm.weight.copy_(1.0 + 0.2 * torch.randn(hidden))
            self.norm.bias.copy_(0.2 * torch.randn(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


def get_inputs():
    return [2.0 * torch.randn(ROWS, HIDDEN) + 0.3]


def get_init_inputs():
    return [HIDDEN, EPS]
