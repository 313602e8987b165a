"""ConvNeXt stage: channels-first LayerNorm and a 2x2 stride-2 downsampling conv, then two blocks (7x7 depthwise conv, channels-last LayerNorm, pointwise MLP with GELU, layer scale, residual)."""

import os
import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH_SIZE = 4
    CHANNELS = 96
    HEIGHT = 56
    WIDTH = 56
else:
    BATCH_SIZE = 2
    CHANNELS = 8
    HEIGHT = 10
    WIDTH = 10


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


class LayerNorm2d(nn.Module):
    """channels_first LayerNorm as ConvNeXt writes it"""
    def __init__(self, c, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(c))
        self.bias = nn.Parameter(torch.zeros(c))
        self.eps = eps

    def forward(self, x):
        u = x.mean(1, keepdim=True)
        s = (x - u).pow(2).mean(1, keepdim=True)
        x = (x - u) / torch.sqrt(s + self.eps)
        return self.weight[:, None, None] * x + self.bias[:, None, None]


class Block(nn.Module):
    def __init__(self, dim, layer_scale=1e-1):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, kernel_size=7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.pwconv1 = nn.Linear(dim, 4 * dim)
        self.act = nn.GELU()
        self.pwconv2 = nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(layer_scale * torch.ones(dim))

    def forward(self, x):
        shortcut = x
        x = self.dwconv(x)
        x = x.permute(0, 2, 3, 1)
        x = self.norm(x)
        x = self.pwconv2(self.act(self.pwconv1(x)))
        x = self.gamma * x
        return shortcut + x.permute(0, 3, 1, 2)


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.down = nn.Sequential(LayerNorm2d(channels), nn.Conv2d(channels, channels * 2, kernel_size=2, stride=2))
        self.blocks = nn.Sequential(Block(channels * 2), Block(channels * 2))
        _draw_constant_init(self)

    def forward(self, x):
        return self.blocks(self.down(x))


def get_inputs():
    return [torch.randn(BATCH_SIZE, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS]
