"""Pre-norm projection: RMS normalisation with a gain, then a linear layer."""

import os

import torch
import torch.nn as nn

CATEGORY = "fusion"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    TOKENS, HIDDEN, OUT_FEATURES = 8192, 4096, 4096
else:
    TOKENS, HIDDEN, OUT_FEATURES = 300, 257, 128


class Model(nn.Module):
    def __init__(self, hidden: int, out_features: int, eps: float = 1e-6):
        super().__init__()
        self.gain = nn.Parameter(1.0 + 0.2 * torch.randn(hidden))
        self.proj = nn.Linear(hidden, out_features, bias=False)
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        normed = x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.gain
        return self.proj(normed)


def get_inputs():
    return [3.0 * torch.randn(TOKENS, HIDDEN) + 0.5]


def get_init_inputs():
    return [HIDDEN, OUT_FEATURES]
