"""Shift-MLP (ShiftViT-style) blocks on a channels-last token grid: channel groups rolled by torch.roll one token up, down, left and right, LayerNorm, an MLP, and a residual; a patch embedding before and mean-pooled logits after."""

import os

import torch
import torch.nn as nn

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, SIDE, PATCH, DIM, DEPTH, CLASSES = 16, 224, 4, 96, 2, 1000
else:
    BATCH, SIDE, PATCH, DIM, DEPTH, CLASSES = 2, 20, 4, 16, 2, 7


def _draw_constant_init(model):
    with torch.no_grad():  # LayerNorm's 1 and 0 drawn, so no kernel can hard-code them
        for m in model.modules():
            if isinstance(m, nn.LayerNorm):
                m.weight.uniform_(0.5, 1.5)
                m.bias.normal_(0.0, 0.1)


def shift_tokens(x, fraction=12):
    """x: (B, H, W, C). Four channel groups of C // fraction move one token each way; the rest stay."""
    g = x.size(-1) // fraction
    out = x.clone()
    out[..., 0 * g:1 * g] = torch.roll(x[..., 0 * g:1 * g], shifts=1, dims=1)
    out[..., 1 * g:2 * g] = torch.roll(x[..., 1 * g:2 * g], shifts=-1, dims=1)
    out[..., 2 * g:3 * g] = torch.roll(x[..., 2 * g:3 * g], shifts=1, dims=2)
    out[..., 3 * g:4 * g] = torch.roll(x[..., 3 * g:4 * g], shifts=-1, dims=2)
    return out


class ShiftBlock(nn.Module):
    def __init__(self, dim, ratio=2.0, fraction=12):
        super().__init__()
        self.fraction = fraction
        self.norm = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, int(dim * ratio)), nn.GELU(), nn.Linear(int(dim * ratio), dim))

    def forward(self, x):
        x = shift_tokens(x, self.fraction)
        return x + self.mlp(self.norm(x))


class Model(nn.Module):
    def __init__(self, patch, dim, depth, classes):
        super().__init__()
        self.embed = nn.Conv2d(3, dim, patch, patch)
        self.blocks = nn.Sequential(*[ShiftBlock(dim) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)
        _draw_constant_init(self)

    def forward(self, img):
        x = self.embed(img).permute(0, 2, 3, 1)
        x = self.norm(self.blocks(x))
        return self.head(x.mean(dim=(1, 2)))


def get_inputs():
    return [torch.randn(BATCH, 3, SIDE, SIDE)]


def get_init_inputs():
    return [PATCH, DIM, DEPTH, CLASSES]
