"""Convolutional autoencoder: strided convs down, transposed convs (output_padding) back up to the input's size, BatchNorm (training mode) and LeakyReLU between, sigmoid output."""

import os

import torch
import torch.nn as nn

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, CHANNELS, SIDE, BASE = 16, 3, 128, 64
else:
    BATCH, CHANNELS, SIDE, BASE = 2, 3, 12, 4


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
    def __init__(self, channels, base):
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Conv2d(channels, base, 3, stride=2, padding=1), nn.BatchNorm2d(base), nn.LeakyReLU(0.2),
            nn.Conv2d(base, 2 * base, 3, stride=2, padding=1), nn.BatchNorm2d(2 * base), nn.LeakyReLU(0.2))
        self.decoder = nn.Sequential(
            nn.ConvTranspose2d(2 * base, base, 3, stride=2, padding=1, output_padding=1), nn.BatchNorm2d(base),
            nn.LeakyReLU(0.2),
            nn.ConvTranspose2d(base, channels, 3, stride=2, padding=1, output_padding=1), nn.Sigmoid())
        _draw_constant_init(self)

    def forward(self, x):
        return self.decoder(self.encoder(x))


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, SIDE, SIDE)]


def get_init_inputs():
    return [CHANNELS, BASE]
