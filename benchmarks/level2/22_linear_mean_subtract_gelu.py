"""Linear layer, subtract each row's mean over the features, then GELU."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "fusion"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, IN_FEATURES, OUT_FEATURES = 8192, 2048, 4096
else:
    BATCH, IN_FEATURES, OUT_FEATURES = 250, 300, 199


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.linear(x)
        return F.gelu(y - y.mean(dim=-1, keepdim=True))


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES) + 0.3]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
