"""Linear projection followed by L2 normalisation of each row (an embedding head)."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "fusion"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, IN_FEATURES, OUT_FEATURES = 16384, 2048, 1024
else:
    BATCH, IN_FEATURES, OUT_FEATURES = 400, 200, 129


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.normalize(self.linear(x), p=2.0, dim=-1)


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
