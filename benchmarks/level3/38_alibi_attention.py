"""Causal self-attention with ALiBi: per-head slopes as a buffer, a linear distance bias built in forward from aranges, a causal mask by masked_fill, tied input/output embeddings (F.linear with the embedding's weight)."""

import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, SEQ, VOCAB, DIM, HEADS = 4, 512, 32000, 512, 8
else:
    BATCH, SEQ, VOCAB, DIM, HEADS = 2, 9, 37, 16, 4


def _draw_constant_init(model):
    """Parameters and buffers PyTorch starts at a constant (norm scales and shifts, running
    statistics), drawn instead, so that no kernel can hard-code them: zeros from normal(0, 0.1),
    other constants scaled by uniform(0.5, 1.5) (a variance stays positive)."""
    with torch.no_grad():
        for t in list(model.parameters()) + list(model.buffers()):
            if t.is_floating_point() and not t.is_meta and bool((t == t.flatten()[0]).all()):  # meta: no values
                if float(t.flatten()[0]) == 0.0:
                    t.normal_(0.0, 0.1)
                else:
                    t.mul_(torch.empty_like(t).uniform_(0.5, 1.5))


class Model(nn.Module):
    def __init__(self, vocab, dim, heads):
        super().__init__()
        self.heads = heads
        self.embed = nn.Embedding(vocab, dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)
        slopes = torch.tensor([2 ** (-8 * (i + 1) / heads) for i in range(heads)])
        self.register_buffer("slopes", slopes)
        _draw_constant_init(self)

    def forward(self, tokens):
        b, s = tokens.shape
        x = self.embed(tokens)
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        pos = torch.arange(s, device=tokens.device)
        distance = (pos[None, :] - pos[:, None]).float()
        scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]) + self.slopes[:, None, None] * distance
        causal = torch.ones(s, s, dtype=torch.bool, device=tokens.device).triu(1)
        scores = scores.masked_fill(causal, float("-inf"))
        y = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, s, -1)
        h = self.norm(x + self.proj(y))
        return F.linear(h, self.embed.weight)


def get_inputs():
    return [torch.randint(0, VOCAB, (BATCH, SEQ))]


def get_init_inputs():
    return [VOCAB, DIM, HEADS]
