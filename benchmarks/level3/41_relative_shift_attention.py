"""Transformer-XL relative attention scores: content and position terms with learned biases, the position term aligned by the padding-and-view relative shift, causal mask, softmax, values."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, SEQ, HEADS, HEAD_DIM = 4, 512, 8, 64
else:
    BATCH, SEQ, HEADS, HEAD_DIM = 2, 6, 2, 4


def rel_shift(x):
    b, h, q, k = x.shape
    x = F.pad(x, (1, 0))
    x = x.view(b, h, k + 1, q)
    return x[:, :, 1:].view(b, h, q, k)


class Model(nn.Module):
    def __init__(self, heads, head_dim):
        super().__init__()
        self.u = nn.Parameter(torch.randn(heads, head_dim) * 0.1)
        self.v = nn.Parameter(torch.randn(heads, head_dim) * 0.1)
        self.scale = head_dim ** -0.5

    def forward(self, q, k, v, r):
        ac = torch.einsum("bhqd,bhkd->bhqk", q + self.u[None, :, None], k)
        bd = rel_shift(torch.einsum("bhqd,hkd->bhqk", q + self.v[None, :, None], r))
        n = q.shape[2]
        mask = torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1)
        scores = ((ac + bd) * self.scale).masked_fill(mask, float("-inf"))
        return torch.matmul(scores.softmax(-1), v)


def get_inputs():
    return [torch.randn(BATCH, HEADS, SEQ, HEAD_DIM), torch.randn(BATCH, HEADS, SEQ, HEAD_DIM),
            torch.randn(BATCH, HEADS, SEQ, HEAD_DIM), torch.randn(HEADS, SEQ, HEAD_DIM)]


def get_init_inputs():
    return [HEADS, HEAD_DIM]
