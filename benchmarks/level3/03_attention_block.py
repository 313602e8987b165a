"""Multi-head self-attention block written out: QKV projection, attention, output projection, residual, LayerNorm."""

import math
import os

import torch
import torch.nn as nn

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, SEQ, EMBED, HEADS = 8, 1024, 1024, 16
else:
    BATCH, SEQ, EMBED, HEADS = 2, 37, 64, 4


class Model(nn.Module):
    def __init__(self, embed: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(embed, 3 * embed)
        self.out = nn.Linear(embed, embed)
        self.norm = nn.LayerNorm(embed)
        with torch.no_grad():
            self.norm.weight.copy_(1.0 + 0.2 * torch.randn(embed))
            self.norm.bias.copy_(0.2 * torch.randn(embed))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, embed = x.shape
        head_dim = embed // self.heads
        q, k, v = self.qkv(x).split(embed, dim=-1)
        # (batch, seq, embed) -> (batch, heads, seq, head_dim)
        q, k, v = (t.view(batch, seq, self.heads, head_dim).transpose(1, 2) for t in (q, k, v))
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(head_dim)
        context = torch.matmul(torch.softmax(scores, dim=-1), v)
        context = context.transpose(1, 2).reshape(batch, seq, embed)
        return self.norm(x + self.out(context))


def get_inputs():
    return [torch.randn(BATCH, SEQ, EMBED)]


def get_init_inputs():
    return [EMBED, HEADS]
