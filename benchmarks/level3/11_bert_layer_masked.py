"""BERT encoder layer with a padding mask given as 0/1 floats (an additive -10000 bias), post-norm, GELU feed-forward."""

import os
import math
import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH_SIZE = 4
    SEQ_LEN = 128
    HIDDEN = 256
    HEADS = 4
else:
    BATCH_SIZE = 2
    SEQ_LEN = 11
    HIDDEN = 32
    HEADS = 4


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


class SelfAttention(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.d = hidden // heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)

    def split(self, x):
        b, s, _ = x.size()
        return x.view(b, s, self.heads, self.d).permute(0, 2, 1, 3)

    def forward(self, x, mask):
        q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.d)
        ext = (1.0 - mask[:, None, None, :]) * -10000.0
        probs = F.softmax(scores + ext, dim=-1)
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        return ctx.view(ctx.size(0), ctx.size(1), -1)


class Model(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.attn = SelfAttention(hidden, heads)
        self.out = nn.Linear(hidden, hidden)
        self.ln1 = nn.LayerNorm(hidden, eps=1e-12)
        self.inter = nn.Linear(hidden, 4 * hidden)
        self.out2 = nn.Linear(4 * hidden, hidden)
        self.ln2 = nn.LayerNorm(hidden, eps=1e-12)
        _draw_constant_init(self)

    def forward(self, x, mask):
        a = self.ln1(x + self.out(self.attn(x, mask)))
        return self.ln2(a + self.out2(F.gelu(self.inter(a))))


def get_inputs():
    mask = (torch.rand(BATCH_SIZE, SEQ_LEN) > 0.2).float()
    return [torch.randn(BATCH_SIZE, SEQ_LEN, HIDDEN), mask]


def get_init_inputs():
    return [HIDDEN, HEADS]
