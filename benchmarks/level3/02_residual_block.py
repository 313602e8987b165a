"""ResNet basic block: conv-BN-ReLU-conv-BN, identity shortcut, ReLU (inference)."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, CHANNELS, HEIGHT, WIDTH = 32, 128, 56, 56  # about 60 GFLOP
else:
    BATCH, CHANNELS, HEIGHT, WIDTH = 2, 8, 17, 19


def _trained_batch_norm(channels: int) -> nn.BatchNorm2d:
    bn = nn.BatchNorm2d(channels)
    with torch.no_grad():
        bn.running_mean.copy_(0.2 * torch.randn(channels))
        bn.running_var.copy_(0.5 + torch.rand(channels))
        bn.weight.copy_(1.0 + 0.2 * torch.randn(channels))
        bn.bias.copy_(0.2 * torch.randn(channels))
    return bn


def _infer(bn: nn.BatchNorm2d, x: torch.Tensor) -> torch.Tensor:
    return F.batch_norm(x, bn.running_mean, bn.running_var, bn.weight, bn.bias,
                        training=False, eps=bn.eps)


class Model(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = _trained_batch_norm(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = _trained_batch_norm(channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(_infer(self.bn1, self.conv1(x)))
        y = _infer(self.bn2, self.conv2(y))
        return torch.relu(y + x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS]
