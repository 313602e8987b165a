"""Matrix-vector product y = A @ x."""

import math
import os

import torch
import torch.nn as nn

CATEGORY = "matmul"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    M, K = 16384, 8192  # A is 512 MB: purely bandwidth-bound
else:
    M, K = 1000, 1023


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return torch.mv(a, x)


def get_inputs():
    # The right operand is scaled by 1/sqrt(K), as trained weights are, so outputs
    # are O(1). Unscaled, outputs reach hundreds and plain fp32 rounding over
    # K >= 1024 already exceeds the default 1e-4 tolerance near zero.
    return [torch.randn(M, K), torch.randn(K) / math.sqrt(K)]


def get_init_inputs():
    return []
