"""Group normalisation of an NCHW tensor with a per-channel affine transform."""

import os

import torch
import torch.nn as nn

CATEGORY = "normalization"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, CHANNELS, HEIGHT, WIDTH, GROUPS = 64, 64, 128, 128, 8
else:
    BATCH, CHANNELS, HEIGHT, WIDTH, GROUPS = 3, 12, 33, 17, 4


class Model(nn.Module):
    def __init__(self, groups: int, channels: int):
        super().__init__()
        self.norm = nn.GroupNorm(groups, channels, eps=1e-5)
        with torch.no_grad():
            self.norm.weight.copy_(1.0 + 0.2 * torch.randn(channels))
            self.norm.bias.copy_(0.2 * torch.randn(channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH) * 1.5 - 0.2]


def get_init_inputs():
    return [GROUPS, CHANNELS]
