"""Temporal convolutional network: three residual blocks of dilated causal 1-d convolutions (padding, then the tail chomped off by slicing), ReLU, a 1x1 downsampling conv on the first residual."""

import os
import torch
import torch.nn as nn

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH_SIZE = 8
    IN_CHANNELS = 32
    CHANNELS = 64
    LENGTH = 512
    KERNEL_SIZE = 3
else:
    BATCH_SIZE = 2
    IN_CHANNELS = 5
    CHANNELS = 8
    LENGTH = 30
    KERNEL_SIZE = 3


class Chomp1d(nn.Module):
    def __init__(self, chomp):
        super().__init__()
        self.chomp = chomp

    def forward(self, x):
        return x[:, :, :-self.chomp].contiguous()


class TemporalBlock(nn.Module):
    def __init__(self, cin, cout, k, dilation):
        super().__init__()
        pad = (k - 1) * dilation
        self.net = nn.Sequential(
            nn.Conv1d(cin, cout, k, padding=pad, dilation=dilation), Chomp1d(pad), nn.ReLU(),
            nn.Conv1d(cout, cout, k, padding=pad, dilation=dilation), Chomp1d(pad), nn.ReLU())
        self.downsample = nn.Conv1d(cin, cout, 1) if cin != cout else None
        self.relu = nn.ReLU()

    def forward(self, x):
        out = self.net(x)
        res = x if self.downsample is None else self.downsample(x)
        return self.relu(out + res)


class Model(nn.Module):
    def __init__(self, in_channels, channels, kernel_size):
        super().__init__()
        layers = []
        for i in range(3):
            layers.append(TemporalBlock(in_channels if i == 0 else channels, channels, kernel_size, 2 ** i))
        self.network = nn.Sequential(*layers)

    def forward(self, x):
        return self.network(x)


def get_inputs():
    return [torch.randn(BATCH_SIZE, IN_CHANNELS, LENGTH)]


def get_init_inputs():
    return [IN_CHANNELS, CHANNELS, KERNEL_SIZE]
