"""Latent-diffusion spatial transformer: GroupNorm, 1x1 conv in, the feature map flattened to tokens, self-attention, cross-attention to a text context (scaled_dot_product_attention), GEGLU feed-forward, tokens folded back, 1x1 conv out, residual."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, CHANNELS, SIDE, CONTEXT, CONTEXT_DIM, HEADS = 2, 320, 32, 77, 768, 8
else:
    BATCH, CHANNELS, SIDE, CONTEXT, CONTEXT_DIM, HEADS = 2, 16, 5, 7, 12, 2


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


class Attention(nn.Module):
    def __init__(self, dim, context_dim, heads):
        super().__init__()
        self.heads = heads
        self.to_q = nn.Linear(dim, dim, bias=False)
        self.to_k = nn.Linear(context_dim, dim, bias=False)
        self.to_v = nn.Linear(context_dim, dim, bias=False)
        self.to_out = nn.Linear(dim, dim)

    def forward(self, x, context):
        b, n, d = x.shape
        q = self.to_q(x).view(b, n, self.heads, -1).transpose(1, 2)
        k = self.to_k(context).view(b, context.shape[1], self.heads, -1).transpose(1, 2)
        v = self.to_v(context).view(b, context.shape[1], self.heads, -1).transpose(1, 2)
        out = F.scaled_dot_product_attention(q, k, v)
        return self.to_out(out.transpose(1, 2).reshape(b, n, d))


class Model(nn.Module):
    def __init__(self, channels, context_dim, heads):
        super().__init__()
        self.norm = nn.GroupNorm(8 if channels % 8 == 0 else 1, channels, eps=1e-6)
        self.proj_in = nn.Conv2d(channels, channels, 1)
        self.norm1 = nn.LayerNorm(channels)
        self.attn1 = Attention(channels, channels, heads)
        self.norm2 = nn.LayerNorm(channels)
        self.attn2 = Attention(channels, context_dim, heads)
        self.norm3 = nn.LayerNorm(channels)
        self.geglu = nn.Linear(channels, 8 * channels)
        self.ff_out = nn.Linear(4 * channels, channels)
        self.proj_out = nn.Conv2d(channels, channels, 1)
        _draw_constant_init(self)

    def forward(self, x, context):
        b, c, h, w = x.shape
        t = self.proj_in(self.norm(x)).permute(0, 2, 3, 1).reshape(b, h * w, c)
        t = t + self.attn1(self.norm1(t), self.norm1(t))
        t = t + self.attn2(self.norm2(t), context)
        a, gate = self.geglu(self.norm3(t)).chunk(2, dim=-1)
        t = t + self.ff_out(a * F.gelu(gate))
        return x + self.proj_out(t.reshape(b, h, w, c).permute(0, 3, 1, 2))


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, SIDE, SIDE), torch.randn(BATCH, CONTEXT, CONTEXT_DIM)]


def get_init_inputs():
    return [CHANNELS, CONTEXT_DIM, HEADS]
