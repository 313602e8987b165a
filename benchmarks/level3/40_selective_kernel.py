"""Selective-kernel convolution (SKNet): two branches (3x3 and dilated 3x3 grouped convs with BatchNorm in eval and ReLU) stacked, their sum pooled and squeezed through a small MLP, a softmax over the branches choosing each channel's mix."""

import os

import torch
import torch.nn as nn

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, CHANNELS, SIDE, GROUPS, REDUCED = 8, 256, 28, 32, 64
else:
    BATCH, CHANNELS, SIDE, GROUPS, REDUCED = 2, 16, 6, 4, 8


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
    def __init__(self, channels, groups, reduced):
        super().__init__()
        self.branches = nn.ModuleList([
            nn.Sequential(nn.Conv2d(channels, channels, 3, padding=d, dilation=d, groups=groups, bias=False),
                          nn.BatchNorm2d(channels), nn.ReLU(inplace=True)) for d in (1, 2)])
        self.fc = nn.Sequential(nn.Linear(channels, reduced), nn.ReLU(inplace=True))
        self.select = nn.Linear(reduced, 2 * channels)
        self.eval()
        _draw_constant_init(self)

    def forward(self, x):
        feats = torch.stack([branch(x) for branch in self.branches], dim=1)
        s = feats.sum(dim=1).mean(dim=(2, 3))
        weights = self.select(self.fc(s)).view(x.shape[0], 2, -1).softmax(dim=1)
        return (feats * weights[:, :, :, None, None]).sum(dim=1)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, SIDE, SIDE)]


def get_init_inputs():
    return [CHANNELS, GROUPS, REDUCED]
