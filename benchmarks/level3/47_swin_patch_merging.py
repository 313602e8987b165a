"""Swin patch merging: the four interleaved 2x2 sub-grids taken by strided slicing, concatenated along channels, LayerNorm, a linear reduction to twice the channels."""

import os

import torch
import torch.nn as nn

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, SIDE, DIM = 16, 56, 96
else:
    BATCH, SIDE, DIM = 2, 6, 8


def _draw_constant_init(model):
    """Parameters and buffers PyTorch starts at a constant (norm scales and shifts, running
    statistics), drawn instead, so that no kernel can hard-code them: zeros from normal(0, 0.1),
    other constants scaled by uniform(0.5, 1.5) (a variance stays positive)."""
    with torch.no_grad():
        for t in list(model.parameters()) + list(model.buffers()):
            if t.is_floating_point() and not t.is_meta and bool((t == t.flatten()[0]).all()):  # meta: no values
                if float(t.flatten()[0]) == 0.0:
                    t.normal_(0.0, 0.1)
                else:
                    t.mul_(torch.empty_like(t).uniform_(0.5, 1.5))


class Model(nn.Module):
    def __init__(self, side, dim):
        super().__init__()
        self.side = side
        self.norm = nn.LayerNorm(4 * dim)
        self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)
        _draw_constant_init(self)

    def forward(self, x):
        b, _, c = x.shape
        x = x.view(b, self.side, self.side, c)
        x0, x1 = x[:, 0::2, 0::2, :], x[:, 1::2, 0::2, :]
        x2, x3 = x[:, 0::2, 1::2, :], x[:, 1::2, 1::2, :]
        x = torch.cat([x0, x1, x2, x3], -1).view(b, -1, 4 * c)
        return self.reduction(self.norm(x))


def get_inputs():
    return [torch.randn(BATCH, SIDE * SIDE, DIM)]


def get_init_inputs():
    return [SIDE, DIM]
