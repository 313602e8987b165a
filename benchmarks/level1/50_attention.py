"""Scaled dot-product attention written as matmul, softmax, matmul (no mask)."""

import math
import os

import torch
import torch.nn as nn

CATEGORY = "attention"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, HEADS, SEQ, HEAD_DIM = 4, 16, 2048, 64  # 1 GB of scores if materialised
else:
    BATCH, HEADS, SEQ, HEAD_DIM = 2, 3, 100, 32


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
        weights = torch.softmax(scores, dim=-1)
        return torch.matmul(weights, v)


def get_inputs():
    shape = (BATCH, HEADS, SEQ, HEAD_DIM)
    return [torch.randn(shape), torch.randn(shape), torch.randn(shape)]


def get_init_inputs():
    return []
