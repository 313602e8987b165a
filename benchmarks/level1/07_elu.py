"""ELU with alpha != 1, applied elementwise to a 4-D feature map."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "elementwise"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    SHAPE = (32, 128, 128, 128)  # 256 MB
else:
    SHAPE = (3, 17, 45, 29)

ALPHA = 1.3


class Model(nn.Module):
    def __init__(self, alpha: float):
        super().__init__()
        self.alpha = alpha

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.elu(x, alpha=self.alpha)


def get_inputs():
    return [torch.randn(*SHAPE)]


def get_init_inputs():
    return [ALPHA]
