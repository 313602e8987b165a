"""Four-layer perceptron with ReLU between the layers."""

import os

import torch
import torch.nn as nn

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, WIDTHS = 4096, [2048, 4096, 4096, 2048, 1000]  # about 290 GFLOP
else:
    BATCH, WIDTHS = 64, [300, 257, 129, 65, 10]


class Model(nn.Module):
    def __init__(self, widths: list[int]):
        super().__init__()
        layers: list[nn.Module] = []
        for i, (fan_in, fan_out) in enumerate(zip(widths[:-1], widths[1:])):
            layers.append(nn.Linear(fan_in, fan_out))
            if i < len(widths) - 2:
                layers.append(nn.ReLU())
        self.layers = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


def get_inputs():
    return [torch.randn(BATCH, WIDTHS[0])]


def get_init_inputs():
    return [WIDTHS]
