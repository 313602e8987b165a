"""Two ResNeXt bottleneck blocks (BatchNorm in training mode): 1x1 conv, 3x3 grouped conv with cardinality 32, 1x1 expansion, projection shortcut on the strided block."""

import os
import torch
import torch.nn as nn

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH_SIZE = 4
    IN_PLANES = 256
    HEIGHT = 28
    WIDTH = 28
    CARDINALITY = 32
    BOTTLENECK_WIDTH = 4
else:
    BATCH_SIZE = 2
    IN_PLANES = 64
    HEIGHT = 6
    WIDTH = 6
    CARDINALITY = 32
    BOTTLENECK_WIDTH = 1


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


class Block(nn.Module):
    expansion = 2

    def __init__(self, in_planes, cardinality, bottleneck_width, stride=1):
        super().__init__()
        gw = cardinality * bottleneck_width
        self.conv1 = nn.Conv2d(in_planes, gw, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(gw)
        self.conv2 = nn.Conv2d(gw, gw, 3, stride=stride, padding=1, groups=cardinality, bias=False)
        self.bn2 = nn.BatchNorm2d(gw)
        self.conv3 = nn.Conv2d(gw, self.expansion * gw, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(self.expansion * gw)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_planes != self.expansion * gw:
            self.shortcut = nn.Sequential(nn.Conv2d(in_planes, self.expansion * gw, 1, stride=stride, bias=False),
                                          nn.BatchNorm2d(self.expansion * gw))

    def forward(self, x):
        out = torch.relu(self.bn1(self.conv1(x)))
        out = torch.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return torch.relu(out + self.shortcut(x))


class Model(nn.Module):
    def __init__(self, in_planes, cardinality, bottleneck_width):
        super().__init__()
        self.a = Block(in_planes, cardinality, bottleneck_width, 1)
        self.b = Block(2 * cardinality * bottleneck_width, cardinality, bottleneck_width, 2)
        _draw_constant_init(self)

    def forward(self, x):
        return self.b(self.a(x))


def get_inputs():
    return [torch.randn(BATCH_SIZE, IN_PLANES, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_PLANES, CARDINALITY, BOTTLENECK_WIDTH]
