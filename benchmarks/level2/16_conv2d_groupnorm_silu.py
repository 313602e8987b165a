"""3x3 convolution, group normalisation, then SiLU (a diffusion U-Net block step)."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "fusion"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, C_IN, C_OUT, HEIGHT, WIDTH, GROUPS = 16, 64, 128, 128, 128, 32
else:
    BATCH, C_IN, C_OUT, HEIGHT, WIDTH, GROUPS = 2, 8, 12, 29, 31, 4


class Model(nn.Module):
    def __init__(self, c_in: int, c_out: int, groups: int):
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, 3, padding=1)
        self.norm = nn.GroupNorm(groups, c_out)
        with torch.no_grad():
            self.norm.weight.copy_(1.0 + 0.2 * torch.randn(c_out))
            self.norm.bias.copy_(0.2 * torch.randn(c_out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.silu(self.norm(self.conv(x)))


def get_inputs():
    return [torch.randn(BATCH, C_IN, HEIGHT, WIDTH)]


def get_init_inputs():
    return [C_IN, C_OUT, GROUPS]
