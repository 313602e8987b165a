"""ESPCN super-resolution: three convolutions with tanh, a sub-pixel convolution (nn.PixelShuffle) to the upscaled image, sigmoid."""

import os

import torch
import torch.nn as nn

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, CHANNELS, SIDE, SCALE = 8, 3, 128, 3
else:
    BATCH, CHANNELS, SIDE, SCALE = 2, 3, 7, 3


class Model(nn.Module):
    def __init__(self, channels, scale):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(channels, 64, 5, padding=2), nn.Tanh(),
            nn.Conv2d(64, 32, 3, padding=1), nn.Tanh(),
            nn.Conv2d(32, channels * scale * scale, 3, padding=1))
        self.shuffle = nn.PixelShuffle(scale)

    def forward(self, x):
        return torch.sigmoid(self.shuffle(self.body(x)))


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, SIDE, SIDE)]


def get_init_inputs():
    return [CHANNELS, SCALE]
