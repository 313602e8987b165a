"""Linear layer, tanh, then clamping into [-0.6, 0.8]."""

import os

import torch
import torch.nn as nn

CATEGORY = "fusion"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, IN_FEATURES, OUT_FEATURES = 8192, 2048, 4096
else:
    BATCH, IN_FEATURES, OUT_FEATURES = 301, 128, 257


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int, low: float, high: float):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.low = low
        self.high = high

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.clamp(torch.tanh(self.linear(x)), self.low, self.high)


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES, -0.6, 0.8]
