"""Pre-norm transformer block: LayerNorm, multi-head self-attention, residual; LayerNorm, GELU MLP, residual."""

import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, SEQ, EMBED, HEADS = 4, 1024, 1024, 16
else:
    BATCH, SEQ, EMBED, HEADS = 2, 33, 64, 4


def _random_affine_layer_norm(dim: int) -> nn.LayerNorm:
    norm = nn.LayerNorm(dim)
    with torch.no_grad():
        norm.weight.copy_(1.0 + 0.2 * torch.randn(dim))
        norm.bias.copy_(0.2 * torch.randn(dim))
    return norm


class Model(nn.Module):
    def __init__(self, embed: int, heads: int):
        super().__init__()
        self.heads = heads
        self.norm1 = _random_affine_layer_norm(embed)
        self.qkv = nn.Linear(embed, 3 * embed)
        self.proj = nn.Linear(embed, embed)
        self.norm2 = _random_affine_layer_norm(embed)
        self.fc1 = nn.Linear(embed, 4 * embed)
        self.fc2 = nn.Linear(4 * embed, embed)

    def _attention(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, embed = x.shape
        head_dim = embed // self.heads
        q, k, v = self.qkv(x).split(embed, dim=-1)
        q, k, v = (t.view(batch, seq, self.heads, head_dim).transpose(1, 2) for t in (q, k, v))
        weights = torch.softmax(torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(head_dim), dim=-1)
        context = torch.matmul(weights, v).transpose(1, 2).reshape(batch, seq, embed)
        return self.proj(context)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self._attention(self.norm1(x))
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))


def get_inputs():
    return [torch.randn(BATCH, SEQ, EMBED)]


def get_init_inputs():
    return [EMBED, HEADS]
