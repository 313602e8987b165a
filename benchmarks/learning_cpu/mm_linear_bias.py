"""A linear layer (matmul plus bias)."""

import os

import torch
import torch.nn as nn

CATEGORY = "matmul"
FAMILY = "matmul"  # the operator family the learning benchmark splits by
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, IN_FEATURES, OUT_FEATURES = 8192, 4096, 4096
else:
    BATCH, IN_FEATURES, OUT_FEATURES = 64, 96, 80  # the CPU interpreter's size: tens of programs per launch


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x)


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
