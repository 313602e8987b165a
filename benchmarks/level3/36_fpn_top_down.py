"""Feature pyramid network over three backbone levels: 1x1 lateral convs, a top-down path of nearest 2x upsampling (F.interpolate) added to each lateral, 3x3 output convs, and an extra level from a stride-2 max pool; the levels returned flattened and joined."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, C3, C4, C5, OUT, SIDE = 4, 512, 1024, 2048, 256, 64
else:
    BATCH, C3, C4, C5, OUT, SIDE = 2, 6, 8, 10, 4, 8


class Model(nn.Module):
    def __init__(self, c3, c4, c5, out):
        super().__init__()
        self.lateral = nn.ModuleList([nn.Conv2d(c, out, 1) for c in (c3, c4, c5)])
        self.output = nn.ModuleList([nn.Conv2d(out, out, 3, padding=1) for _ in range(3)])

    def forward(self, f3, f4, f5):
        p5 = self.lateral[2](f5)
        p4 = self.lateral[1](f4) + F.interpolate(p5, scale_factor=2, mode="nearest")
        p3 = self.lateral[0](f3) + F.interpolate(p4, scale_factor=2, mode="nearest")
        outs = [conv(p) for conv, p in zip(self.output, (p3, p4, p5))]
        outs.append(F.max_pool2d(outs[-1], 1, stride=2))
        return torch.cat([o.flatten(1) for o in outs], dim=1)


def get_inputs():
    return [torch.randn(BATCH, C3, SIDE, SIDE), torch.randn(BATCH, C4, SIDE // 2, SIDE // 2),
            torch.randn(BATCH, C5, SIDE // 4, SIDE // 4)]


def get_init_inputs():
    return [C3, C4, C5, OUT]
