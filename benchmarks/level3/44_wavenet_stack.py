"""WaveNet residual stack: causal dilated 1-d convolutions (left padding by F.pad), gated activation (tanh times sigmoid of the two halves), residual and skip 1x1 convolutions, the skips summed and passed through ReLU and two 1x1 convolutions."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, CHANNELS, LENGTH, LAYERS, SKIP = 4, 64, 16000, 10, 256
else:
    BATCH, CHANNELS, LENGTH, LAYERS, SKIP = 2, 8, 40, 4, 12


class Model(nn.Module):
    def __init__(self, channels, layers, skip):
        super().__init__()
        self.dilations = [2 ** i for i in range(layers)]
        self.filters = nn.ModuleList([nn.Conv1d(channels, 2 * channels, 2, dilation=d) for d in self.dilations])
        self.residual = nn.ModuleList([nn.Conv1d(channels, channels, 1) for _ in self.dilations])
        self.skip = nn.ModuleList([nn.Conv1d(channels, skip, 1) for _ in self.dilations])
        self.head = nn.Sequential(nn.ReLU(), nn.Conv1d(skip, skip, 1), nn.ReLU(), nn.Conv1d(skip, 1, 1))

    def forward(self, x):
        skips = 0
        for d, conv, res, skip in zip(self.dilations, self.filters, self.residual, self.skip):
            filt, gate = conv(F.pad(x, (d, 0))).chunk(2, dim=1)
            h = torch.tanh(filt) * torch.sigmoid(gate)
            skips = skips + skip(h)
            x = x + res(h)
        return self.head(skips)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH)]


def get_init_inputs():
    return [CHANNELS, LAYERS, SKIP]
