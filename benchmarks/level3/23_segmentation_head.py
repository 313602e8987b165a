"""Segmentation head in eval mode: 3x3 conv, BatchNorm, ReLU, 1x1 classifier, bilinear resize (align_corners=False) to the output size."""

import os
import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH_SIZE = 2
    CHANNELS = 64
    CLASSES = 21
    HEIGHT = 16
    WIDTH = 16
    OUT_SIZE = 64
else:
    BATCH_SIZE = 2
    CHANNELS = 8
    CLASSES = 5
    HEIGHT = 6
    WIDTH = 6
    OUT_SIZE = 15


def _draw_constant_init(model):
    """Parameters and buffers PyTorch starts at a constant (norm scales and shifts, running
    statistics), drawn instead, so that no kernel can hard-code them: zeros from normal(0, 0.1),
    other constants scaled by uniform(0.5, 1.5) (a variance stays positive)."""
    with torch.no_grad():
        for t in list(model.parameters()) + list(model.buffers()):
            if t.is_floating_point() and not t.is_meta and bool((t == t.flatten()[0]).all()):  # meta: no values
                if float(t.flatten()[0]) == 0.0:
                    t.normal_(0.0, 0.1)
                else:
                    t.mul_(torch.empty_like(t).uniform_(0.5, 1.5))


class Model(nn.Module):
    def __init__(self, channels, classes, out_size):
        super().__init__()
        self.out_size = out_size
        self.conv = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(channels)
        self.cls = nn.Conv2d(channels, classes, 1)
        self.eval()
        _draw_constant_init(self)

    def forward(self, x):
        x = self.cls(F.relu(self.bn(self.conv(x))))
        return F.interpolate(x, size=(self.out_size, self.out_size), mode="bilinear", align_corners=False)


def get_inputs():
    return [torch.randn(BATCH_SIZE, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS, CLASSES, OUT_SIZE]
