"""Instance normalisation of an NCHW tensor (per sample and channel) with affine."""

import os

import torch
import torch.nn as nn

CATEGORY = "normalization"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, CHANNELS, HEIGHT, WIDTH = 32, 128, 128, 128
else:
    BATCH, CHANNELS, HEIGHT, WIDTH = 3, 7, 45, 23


class Model(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.norm = nn.InstanceNorm2d(channels, eps=1e-5, affine=True)
        with torch.no_grad():
            self.norm.weight.copy_(1.0 + 0.2 * torch.randn(channels))
            self.norm.bias.copy_(0.2 * torch.randn(channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH) + 0.4]


def get_init_inputs():
    return [CHANNELS]
