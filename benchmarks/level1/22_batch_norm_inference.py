"""Batch normalisation of an NCHW tensor in inference mode (running statistics)."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "normalization"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, CHANNELS, HEIGHT, WIDTH = 64, 64, 128, 128  # 256 MB
else:
    BATCH, CHANNELS, HEIGHT, WIDTH = 4, 13, 31, 29

EPS = 1e-5


class Model(nn.Module):
    def __init__(self, channels: int, eps: float):
        super().__init__()
        self.eps = eps
        # Running statistics as a trained network would hold them (not the 0/1
        # defaults, which would let a kernel skip the normalisation).
        self.register_buffer("running_mean", 0.5 * torch.randn(channels))
        self.register_buffer("running_var", 0.5 + torch.rand(channels))
        self.weight = nn.Parameter(1.0 + 0.2 * torch.randn(channels))
        self.bias = nn.Parameter(0.2 * torch.randn(channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # training=False: normalise with the stored statistics and never update them.
        return F.batch_norm(
            x, self.running_mean, self.running_var, self.weight, self.bias,
            training=False, eps=self.eps,
        )


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS, EPS]
