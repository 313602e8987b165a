"""Depthwise 3x3 then pointwise 1x1 convolution, then ReLU6 (a MobileNet block)."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "fusion"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, C_IN, C_OUT, HEIGHT, WIDTH = 32, 128, 256, 112, 112
else:
    BATCH, C_IN, C_OUT, HEIGHT, WIDTH = 2, 12, 20, 33, 25


class Model(nn.Module):
    def __init__(self, c_in: int, c_out: int):
        super().__init__()
        self.depthwise = nn.Conv2d(c_in, c_in, 3, padding=1, groups=c_in)
        self.pointwise = nn.Conv2d(c_in, c_out, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu6(self.pointwise(self.depthwise(x)) * 4.0)


def get_inputs():
    return [torch.randn(BATCH, C_IN, HEIGHT, WIDTH)]


def get_init_inputs():
    return [C_IN, C_OUT]
