"""Linear layer, ReLU, then multiplication by a constant scale."""

import os

import torch
import torch.nn as nn

CATEGORY = "fusion"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, IN_FEATURES, OUT_FEATURES = 8192, 2048, 4096
else:
    BATCH, IN_FEATURES, OUT_FEATURES = 300, 257, 100

SCALE = 2.5


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int, scale: float):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.linear(x)) * self.scale


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES, SCALE]
