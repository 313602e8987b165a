"""Matrix multiplication with the right operand stored transposed: C = A @ B.T."""

import math
import os

import torch
import torch.nn as nn

CATEGORY = "matmul"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    M, K, N = 8192, 4096, 2048
else:
    M, K, N = 250, 300, 131


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b_t: torch.Tensor) -> torch.Tensor:
        # b_t has shape (N, K), as nn.Linear stores its weight.
        return torch.matmul(a, b_t.T)


def get_inputs():
    # The right operand is scaled by 1/sqrt(K), as trained weights are, so outputs
    # are O(1). Unscaled, outputs reach hundreds and plain fp32 rounding over
    # K >= 1024 already exceeds the default 1e-4 tolerance near zero.
    return [torch.randn(M, K), torch.randn(N, K) / math.sqrt(K)]


def get_init_inputs():
    return []
