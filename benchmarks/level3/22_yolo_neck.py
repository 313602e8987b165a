"""YOLO-style neck in eval mode: Conv-BatchNorm-SiLU, SPPF (three chained 5x5 max pools and a concat), nearest 2x upsampling, concat with the input, fusing conv."""

import os
import torch
import torch.nn as nn

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH_SIZE = 2
    CHANNELS = 64
    HEIGHT = 32
    WIDTH = 32
else:
    BATCH_SIZE = 2
    CHANNELS = 8
    HEIGHT = 8
    WIDTH = 8


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


class Conv(nn.Module):
    def __init__(self, c1, c2, k=1, s=1):
        super().__init__()
        self.conv = nn.Conv2d(c1, c2, k, s, k // 2, bias=False)
        self.bn = nn.BatchNorm2d(c2, eps=1e-3)
        self.act = nn.SiLU()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class SPPF(nn.Module):
    def __init__(self, c1, c2, k=5):
        super().__init__()
        c_ = c1 // 2
        self.cv1 = Conv(c1, c_, 1, 1)
        self.cv2 = Conv(c_ * 4, c2, 1, 1)
        self.m = nn.MaxPool2d(kernel_size=k, stride=1, padding=k // 2)

    def forward(self, x):
        x = self.cv1(x)
        y1 = self.m(x)
        y2 = self.m(y1)
        return self.cv2(torch.cat((x, y1, y2, self.m(y2)), 1))


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.down = Conv(channels, channels * 2, 3, 2)
        self.sppf = SPPF(channels * 2, channels * 2)
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.fuse = Conv(channels * 3, channels, 3, 1)
        self.eval()
        _draw_constant_init(self)

    def forward(self, x):
        y = self.sppf(self.down(x))
        return self.fuse(torch.cat([self.up(y), x], 1))


def get_inputs():
    return [torch.randn(BATCH_SIZE, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS]
