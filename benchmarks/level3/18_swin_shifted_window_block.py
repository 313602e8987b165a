"""Swin transformer block with shifted windows: torch.roll, window partition and reverse by view/permute, relative position bias read from a table at a buffer of indices, MLP."""

import os
import torch
import torch.nn as nn

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH_SIZE = 2
    RESOLUTION = 14
    DIM = 96
    HEADS = 3
    WINDOW = 7
    SHIFT = 3
else:
    BATCH_SIZE = 1
    RESOLUTION = 8
    DIM = 12
    HEADS = 3
    WINDOW = 4
    SHIFT = 2


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


def window_partition(x, ws):
    B, H, W, C = x.shape
    x = x.view(B, H // ws, ws, W // ws, ws, C)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, ws, ws, C)


def window_reverse(w, ws, H, W):
    B = int(w.shape[0] / (H * W / ws / ws))
    x = w.view(B, H // ws, W // ws, ws, ws, -1)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(B, H, W, -1)


class WindowAttention(nn.Module):
    def __init__(self, dim, ws, heads):
        super().__init__()
        self.ws = ws
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.table = nn.Parameter(torch.randn((2 * ws - 1) * (2 * ws - 1), heads) * 0.02)
        coords = torch.stack(torch.meshgrid(torch.arange(ws), torch.arange(ws), indexing="ij")).flatten(1)
        rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0).contiguous()
        rel[:, :, 0] += ws - 1
        rel[:, :, 1] += ws - 1
        rel[:, :, 0] *= 2 * ws - 1
        self.register_buffer("index", rel.sum(-1))
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B_, N, C = x.shape
        qkv = self.qkv(x).reshape(B_, N, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = (q * self.scale) @ k.transpose(-2, -1)
        bias = self.table[self.index.view(-1)].view(N, N, -1).permute(2, 0, 1).contiguous()
        attn = (attn + bias.unsqueeze(0)).softmax(dim=-1)
        return self.proj((attn @ v).transpose(1, 2).reshape(B_, N, C))


class Model(nn.Module):
    def __init__(self, dim, resolution, heads, window, shift):
        super().__init__()
        self.res, self.ws, self.shift = resolution, window, shift
        self.norm1 = nn.LayerNorm(dim)
        self.attn = WindowAttention(dim, window, heads)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
        _draw_constant_init(self)

    def forward(self, x):
        H = W = self.res
        B, L, C = x.shape
        shortcut = x
        x = self.norm1(x).view(B, H, W, C)
        x = torch.roll(x, shifts=(-self.shift, -self.shift), dims=(1, 2))
        w = window_partition(x, self.ws).view(-1, self.ws * self.ws, C)
        w = self.attn(w).view(-1, self.ws, self.ws, C)
        x = torch.roll(window_reverse(w, self.ws, H, W), shifts=(self.shift, self.shift), dims=(1, 2))
        x = shortcut + x.view(B, H * W, C)
        return x + self.mlp(self.norm2(x))


def get_inputs():
    return [torch.randn(BATCH_SIZE, RESOLUTION * RESOLUTION, DIM)]


def get_init_inputs():
    return [DIM, RESOLUTION, HEADS, WINDOW, SHIFT]
