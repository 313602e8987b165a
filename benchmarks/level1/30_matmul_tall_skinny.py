"""Tall-skinny matrix multiplication: many rows, a narrow output (M >> N)."""

import math
import os

import torch
import torch.nn as nn

CATEGORY = "matmul"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    M, K, N = 65536, 1024, 64  # A is 256 MB; the product is memory-bound on A
else:
    M, K, N = 4001, 129, 17


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)


def get_inputs():
    # The right operand is scaled by 1/sqrt(K), as trained weights are, so outputs
    # are O(1). Unscaled, outputs reach hundreds and plain fp32 rounding over
    # K >= 1024 already exceeds the default 1e-4 tolerance near zero.
    return [torch.randn(M, K), torch.randn(K, N) / math.sqrt(K)]


def get_init_inputs():
    return []
