"""Matrix multiplication with the left operand stored transposed: C = A.T @ B."""

import math
import os

import torch
import torch.nn as nn

CATEGORY = "matmul"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    M, K, N = 2048, 4096, 8192
else:
    M, K, N = 257, 300, 129


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a_t: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        # a_t has shape (K, M): the reduction runs down its columns.
        return torch.matmul(a_t.T, b)


def get_inputs():
    # The right operand is scaled by 1/sqrt(K), as trained weights are, so outputs
    # are O(1). Unscaled, outputs reach hundreds and plain fp32 rounding over
    # K >= 1024 already exceeds the default 1e-4 tolerance near zero.
    return [torch.randn(K, M), torch.randn(K, N) / math.sqrt(K)]


def get_init_inputs():
    return []
