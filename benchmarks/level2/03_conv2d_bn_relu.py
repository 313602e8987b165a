"""3x3 convolution, batch normalisation with running statistics, then ReLU."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "fusion"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, C_IN, C_OUT, HEIGHT, WIDTH = 16, 64, 128, 128, 128
else:
    BATCH, C_IN, C_OUT, HEIGHT, WIDTH = 2, 8, 12, 33, 29


class Model(nn.Module):
    def __init__(self, c_in: int, c_out: int):
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(c_out)
        # Trained-looking statistics and affine values instead of the 0/1 defaults.
        with torch.no_grad():
            self.bn.running_mean.copy_(0.2 * torch.randn(c_out))
            self.bn.running_var.copy_(0.5 + torch.rand(c_out))
            self.bn.weight.copy_(1.0 + 0.2 * torch.randn(c_out))
            self.bn.bias.copy_(0.2 * torch.randn(c_out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        # Inference-mode batch norm: the stored statistics, never batch statistics.
        y = F.batch_norm(
            y, self.bn.running_mean, self.bn.running_var, self.bn.weight, self.bn.bias,
            training=False, eps=self.bn.eps,
        )
        return torch.relu(y)


def get_inputs():
    return [torch.randn(BATCH, C_IN, HEIGHT, WIDTH)]


def get_init_inputs():
    return [C_IN, C_OUT]
