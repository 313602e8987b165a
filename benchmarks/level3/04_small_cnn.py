"""Small image classifier: three conv-ReLU stages with pooling, then a linear head."""

import os

import torch
import torch.nn as nn

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, HEIGHT, WIDTH, CLASSES = 128, 128, 128, 100
else:
    BATCH, HEIGHT, WIDTH, CLASSES = 4, 33, 37, 10


class Model(nn.Module):
    def __init__(self, classes: int):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(64, 128, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        )
        self.head = nn.Linear(128, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.flatten(self.features(x), start_dim=1))


def get_inputs():
    return [torch.randn(BATCH, 3, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CLASSES]
