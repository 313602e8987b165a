"""T5 self-attention layer: T5's LayerNorm (root mean square, no bias), relative position buckets computed in forward (log-spaced buckets from an arange), a learned bias per bucket and head, no score scaling, residual."""

import math
import os

import torch
import torch.nn as nn

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, SEQ, D_MODEL, HEADS, D_KV = 4, 512, 512, 8, 64
else:
    BATCH, SEQ, D_MODEL, HEADS, D_KV = 2, 10, 16, 2, 8
BUCKETS, MAX_DISTANCE = 32, 128


class T5LayerNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(d))
        self.eps = eps

    def forward(self, x):
        variance = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(variance + self.eps))


def relative_bucket(relative_position, num_buckets, max_distance):
    # bidirectional: half the buckets for each sign, exact near zero, log-spaced beyond
    num_buckets //= 2
    buckets = (relative_position > 0).to(torch.long) * num_buckets
    relative_position = torch.abs(relative_position)
    max_exact = num_buckets // 2
    is_small = relative_position < max_exact
    large = max_exact + (torch.log(relative_position.float() / max_exact) / math.log(max_distance / max_exact)
                         * (num_buckets - max_exact)).to(torch.long)
    large = torch.min(large, torch.full_like(large, num_buckets - 1))
    return buckets + torch.where(is_small, relative_position, large)


class Model(nn.Module):
    def __init__(self, d_model, heads, d_kv):
        super().__init__()
        self.heads, self.d_kv = heads, d_kv
        self.norm = T5LayerNorm(d_model)
        self.q = nn.Linear(d_model, heads * d_kv, bias=False)
        self.k = nn.Linear(d_model, heads * d_kv, bias=False)
        self.v = nn.Linear(d_model, heads * d_kv, bias=False)
        self.o = nn.Linear(heads * d_kv, d_model, bias=False)
        self.relative_attention_bias = nn.Embedding(BUCKETS, heads)

    def forward(self, hidden):
        b, s, _ = hidden.shape
        x = self.norm(hidden)
        q, k, v = (proj(x).view(b, s, self.heads, self.d_kv).transpose(1, 2) for proj in (self.q, self.k, self.v))
        context = torch.arange(s, dtype=torch.long, device=hidden.device)[:, None]
        memory = torch.arange(s, dtype=torch.long, device=hidden.device)[None, :]
        buckets = relative_bucket(memory - context, BUCKETS, MAX_DISTANCE)
        bias = self.relative_attention_bias(buckets).permute(2, 0, 1).unsqueeze(0)
        scores = torch.matmul(q, k.transpose(3, 2)) + bias
        weights = torch.softmax(scores.float(), dim=-1).type_as(scores)
        out = torch.matmul(weights, v).transpose(1, 2).reshape(b, s, -1)
        return hidden + self.o(out)


def get_inputs():
    return [torch.randn(BATCH, SEQ, D_MODEL)]


def get_init_inputs():
    return [D_MODEL, HEADS, D_KV]
