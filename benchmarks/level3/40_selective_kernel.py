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


class Model(nn.Module):
    def __init__(self, channels, groups, reduced):
        super().__init__()
        self.branches = nn.ModuleList([
            nn.Sequential(nn.Conv2d(channels, channels, 3, padding=d, dilation=d, groups=groups, bias=False),
                          nn.BatchNorm2d(channels), nn.ReLU(inplace=True)) for d in (1, 2)])
        self.fc = nn.Sequential(nn.Linear(channels, reduced), nn.ReLU(inplace=True))
        self.select = nn.Linear(reduced, 2 * channels)
        self.eval()

    def forward(self, x):
        feats = torch.stack([branch(x) for branch in self.branches], dim=1)
        s = feats.sum(dim=1).mean(dim=(2, 3))
        weights = self.select(self.fc(s)).view(x.shape[0], 2, -1).softmax(dim=1)
        return (feats * weights[:, :, :, None, None]).sum(dim=1)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, SIDE, SIDE)]


def get_init_inputs():
    return [CHANNELS, GROUPS, REDUCED]
