"""Linear projection to logits followed by a softmax over the output features."""

import os

import torch
import torch.nn as nn

CATEGORY = "fusion"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, IN_FEATURES, OUT_FEATURES = 8192, 2048, 1024
else:
    BATCH, IN_FEATURES, OUT_FEATURES = 300, 129, 333

# Probabilities are O(1/OUT_FEATURES), comparable to the default atol of 1e-4,
# so the check must be relative (see level1/26_softmax.py).
TOLERANCE = (1e-6, 1e-4)


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(self.linear(x), dim=-1)


def get_inputs():
    return [2.0 * torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
