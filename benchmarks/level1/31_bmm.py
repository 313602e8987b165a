"""Batched matrix multiplication of two 3-D tensors (torch.bmm)."""

import math
import os

import torch
import torch.nn as nn

CATEGORY = "matmul"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, M, K, N = 128, 512, 256, 384
else:
    BATCH, M, K, N = 7, 100, 65, 33


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.bmm(a, b)


def get_inputs():
    # The right operand is scaled by 1/sqrt(K), as trained weights are, so outputs
    # are O(1). Unscaled, outputs reach hundreds and plain fp32 rounding over
    # K >= 1024 already exceeds the default 1e-4 tolerance near zero.
    return [torch.randn(BATCH, M, K), torch.randn(BATCH, K, N) / math.sqrt(K)]


def get_init_inputs():
    return []
