"""Conformer convolution module and its macaron half-step feed-forward: LayerNorm, pointwise conv, GLU, depthwise conv1d, BatchNorm (eval), SiLU, pointwise conv, residuals."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, TIME, DIM, KERNEL = 8, 400, 256, 31
else:
    BATCH, TIME, DIM, KERNEL = 2, 19, 16, 7


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
    def __init__(self, dim, kernel):
        super().__init__()
        self.ff_norm = nn.LayerNorm(dim)
        self.ff1 = nn.Linear(dim, 4 * dim)
        self.ff2 = nn.Linear(4 * dim, dim)
        self.norm = nn.LayerNorm(dim)
        self.pointwise1 = nn.Conv1d(dim, 2 * dim, 1)
        self.depthwise = nn.Conv1d(dim, dim, kernel, padding=(kernel - 1) // 2, groups=dim)
        self.bn = nn.BatchNorm1d(dim)
        self.pointwise2 = nn.Conv1d(dim, dim, 1)
        self.eval()
        _draw_constant_init(self)

    def forward(self, x):
        x = x + 0.5 * self.ff2(F.silu(self.ff1(self.ff_norm(x))))
        y = self.norm(x).transpose(1, 2)
        y = F.glu(self.pointwise1(y), dim=1)
        y = F.silu(self.bn(self.depthwise(y)))
        return x + self.pointwise2(y).transpose(1, 2)


def get_inputs():
    return [torch.randn(BATCH, TIME, DIM)]


def get_init_inputs():
    return [DIM, KERNEL]
