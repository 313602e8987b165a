"""RegNetY blocks: 1x1 conv, grouped 3x3 conv (fixed group width) with stride, Squeeze-Excitation (SiLU-free ReLU/sigmoid gate), 1x1 conv, with a projected shortcut on the first block."""

import os

import torch
import torch.nn as nn

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, CIN, SIDE, WIDTH, GROUP_WIDTH, DEPTH = 16, 64, 56, 128, 16, 3
else:
    BATCH, CIN, SIDE, WIDTH, GROUP_WIDTH, DEPTH = 2, 6, 9, 12, 4, 2


def _draw_constant_init(model):
    """Batch-norm scales, shifts and running statistics drawn, so no kernel can hard-code them."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.weight.uniform_(0.5, 1.5)
                m.bias.normal_(0.0, 0.1)
                m.running_mean.normal_(0.0, 0.1)
                m.running_var.uniform_(0.5, 1.5)


class SqueezeExcitation(nn.Module):
    def __init__(self, channels, squeeze):
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(channels, squeeze, 1)
        self.fc2 = nn.Conv2d(squeeze, channels, 1)

    def forward(self, x):
        scale = torch.sigmoid(self.fc2(torch.relu(self.fc1(self.avgpool(x)))))
        return x * scale


class YBlock(nn.Module):
    def __init__(self, cin, cout, stride, group_width, se_ratio=0.25):
        super().__init__()
        groups = cout // group_width
        self.a = nn.Sequential(nn.Conv2d(cin, cout, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))
        self.b = nn.Sequential(nn.Conv2d(cout, cout, 3, stride, 1, groups=groups, bias=False),
                               nn.BatchNorm2d(cout), nn.ReLU(inplace=True))
        self.se = SqueezeExcitation(cout, max(1, int(round(cin * se_ratio))))
        self.c = nn.Sequential(nn.Conv2d(cout, cout, 1, bias=False), nn.BatchNorm2d(cout))
        self.proj = None
        if stride != 1 or cin != cout:
            self.proj = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        shortcut = x if self.proj is None else self.proj(x)
        return torch.relu(shortcut + self.c(self.se(self.b(self.a(x)))))


class Model(nn.Module):
    def __init__(self, cin, width, group_width, depth):
        super().__init__()
        self.blocks = nn.Sequential(*[YBlock(cin if i == 0 else width, width, 2 if i == 0 else 1, group_width)
                                      for i in range(depth)])
        _draw_constant_init(self)
        self.eval()  # batch norm with running statistics: an inference graph

    def forward(self, x):
        return self.blocks(x)


def get_inputs():
    return [torch.randn(BATCH, CIN, SIDE, SIDE)]


def get_init_inputs():
    return [CIN, WIDTH, GROUP_WIDTH, DEPTH]
