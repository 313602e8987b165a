"""RetNet multi-scale retention (parallel form, as in torchscale): per-head decay rates, a causal decay mask built from positions (exp of distance times log-decay, normalised by the square root of its row sums), xPos-style rotation of queries and keys by interleaved pairs (rotate_every_two), scores scaled by their absolute row sums clamped at 1, a per-head RMS group norm, a swish gate and an output projection; in a pre-norm block with a GLU feed-forward."""

import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, SEQ, DIM, HEADS = 4, 256, 512, 8
else:
    BATCH, SEQ, DIM, HEADS = 2, 7, 32, 4


def _draw_constant_init(model):
    """Norm scales and shifts drawn instead of PyTorch's constant 1 and 0, so no kernel can hard-code them."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.LayerNorm):
                m.weight.uniform_(0.5, 1.5)
                m.bias.normal_(0.0, 0.1)


def rotate_every_two(x):
    x1 = x[:, :, :, ::2]
    x2 = x[:, :, :, 1::2]
    x = torch.stack((-x2, x1), dim=-1)
    return x.flatten(-2)


def theta_shift(x, sin, cos):
    return (x * cos) + (rotate_every_two(x) * sin)


class RetNetRelPos(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        angle = 1.0 / (10000 ** torch.linspace(0, 1, dim // heads // 2))
        angle = angle.unsqueeze(-1).repeat(1, 2).flatten()
        decay = torch.log(1 - 2 ** (-5 - torch.arange(heads, dtype=torch.float)))
        self.register_buffer("angle", angle)
        self.register_buffer("decay", decay)

    def forward(self, slen):
        index = torch.arange(slen).to(self.decay)
        sin = torch.sin(index[:, None] * self.angle[None, :])
        cos = torch.cos(index[:, None] * self.angle[None, :])
        mask = torch.tril(torch.ones(slen, slen).to(self.decay))
        mask = torch.masked_fill(index[:, None] - index[None, :], ~mask.bool(), float("inf"))
        mask = torch.exp(mask * self.decay[:, None, None])
        mask = torch.nan_to_num(mask)
        mask = mask / mask.sum(dim=-1, keepdim=True).sqrt()
        return sin, cos, mask


class MultiScaleRetention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.key_dim = dim // heads
        self.scaling = self.key_dim ** -0.5
        self.q_proj = nn.Linear(dim, dim, bias=True)
        self.k_proj = nn.Linear(dim, dim, bias=True)
        self.v_proj = nn.Linear(dim, dim, bias=True)
        self.g_proj = nn.Linear(dim, dim, bias=True)
        self.out_proj = nn.Linear(dim, dim, bias=True)
        self.group_norm_eps = 1e-6

    def forward(self, x, sin, cos, mask):
        bsz, tgt_len, _ = x.size()
        q = self.q_proj(x)
        k = self.k_proj(x) * self.scaling
        v = self.v_proj(x)
        g = self.g_proj(x)
        q = q.view(bsz, tgt_len, self.heads, self.key_dim).transpose(1, 2)
        k = k.view(bsz, tgt_len, self.heads, self.key_dim).transpose(1, 2)
        qr = theta_shift(q, sin, cos)
        kr = theta_shift(k, sin, cos)
        v = v.view(bsz, tgt_len, self.heads, self.key_dim).transpose(1, 2)
        qk = qr @ kr.transpose(-1, -2)
        qk = qk * mask
        qk = qk / qk.detach().abs().sum(dim=-1, keepdim=True).clamp(min=1)
        out = torch.matmul(qk, v).transpose(1, 2)
        out = out * torch.rsqrt(out.pow(2).mean(-1, keepdim=True) + self.group_norm_eps)
        out = out.reshape(bsz, tgt_len, self.heads * self.key_dim)
        out = F.silu(g) * out
        return self.out_proj(out)


class RetNetLayer(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.retention_layer_norm = nn.LayerNorm(dim)
        self.retention = MultiScaleRetention(dim, heads)
        self.final_layer_norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 2 * dim)
        self.gate = nn.Linear(dim, 2 * dim)
        self.fc2 = nn.Linear(2 * dim, dim)

    def forward(self, x, rel_pos):
        x = x + self.retention(self.retention_layer_norm(x), *rel_pos)
        h = self.final_layer_norm(x)
        return x + self.fc2(F.gelu(self.gate(h)) * self.fc1(h))


class Model(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.retnet_rel_pos = RetNetRelPos(dim, heads)
        self.layers = nn.ModuleList([RetNetLayer(dim, heads) for _ in range(2)])
        self.layer_norm = nn.LayerNorm(dim)
        _draw_constant_init(self)

    def forward(self, x):
        rel_pos = self.retnet_rel_pos(x.size(1))
        for layer in self.layers:
            x = layer(x, rel_pos)
        return self.layer_norm(x)


def get_inputs():
    return [torch.randn(BATCH, SEQ, DIM)]


def get_init_inputs():
    return [DIM, HEADS]
