"""Two MobileNetV3 inverted residual blocks in eval mode: 1x1 expansion, BatchNorm, Hardswish, depthwise conv, squeeze-excitation with Hardsigmoid, 1x1 projection, residual."""

import os
import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH_SIZE = 8
    IN_CH = 40
    EXP_CH = 240
    HEIGHT = 28
    WIDTH = 28
else:
    BATCH_SIZE = 2
    IN_CH = 16
    EXP_CH = 24
    HEIGHT = 9
    WIDTH = 9


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


def _make_divisible(v, divisor=8):
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


class SqueezeExcitation(nn.Module):
    def __init__(self, ch, squeeze):
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(ch, squeeze, 1)
        self.fc2 = nn.Conv2d(squeeze, ch, 1)

    def forward(self, x):
        s = self.avgpool(x)
        s = F.relu(self.fc1(s))
        s = F.hardsigmoid(self.fc2(s))
        return x * s


class InvertedResidual(nn.Module):
    def __init__(self, inp, exp, out, k, stride):
        super().__init__()
        self.use_res = stride == 1 and inp == out
        self.block = nn.Sequential(
            nn.Conv2d(inp, exp, 1, bias=False), nn.BatchNorm2d(exp), nn.Hardswish(),
            nn.Conv2d(exp, exp, k, stride, (k - 1) // 2, groups=exp, bias=False), nn.BatchNorm2d(exp), nn.Hardswish(),
            SqueezeExcitation(exp, _make_divisible(exp // 4)),
            nn.Conv2d(exp, out, 1, bias=False), nn.BatchNorm2d(out))

    def forward(self, x):
        y = self.block(x)
        return x + y if self.use_res else y


class Model(nn.Module):
    def __init__(self, in_ch, exp_ch):
        super().__init__()
        self.a = InvertedResidual(in_ch, exp_ch, in_ch, 5, 1)
        self.b = InvertedResidual(in_ch, exp_ch, 80, 3, 2)
        self.eval()
        _draw_constant_init(self)

    def forward(self, x):
        return self.b(self.a(x))


def get_inputs():
    return [torch.randn(BATCH_SIZE, IN_CH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CH, EXP_CH]
