"""DeepLabV3 ASPP head: parallel dilated 3x3 convolutions and an image-pooling branch (bilinear back to size), concatenated, projected, then upsampled 4x by bilinear F.interpolate with align_corners=True."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, CIN, SIDE, MID, CLASSES, RATES = 4, 256, 33, 128, 21, (6, 12, 18)
else:
    BATCH, CIN, SIDE, MID, CLASSES, RATES = 2, 8, 9, 6, 5, (1, 2, 3)


def _draw_constant_init(model):
    """Batch-norm scales, shifts and running statistics drawn, so no kernel can hard-code them."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.weight.uniform_(0.5, 1.5)
                m.bias.normal_(0.0, 0.1)
                m.running_mean.normal_(0.0, 0.1)
                m.running_var.uniform_(0.5, 1.5)


class ASPPConv(nn.Sequential):
    def __init__(self, cin, cout, dilation):
        super().__init__(nn.Conv2d(cin, cout, 3, padding=dilation, dilation=dilation, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU())


class ASPPPooling(nn.Sequential):
    def __init__(self, cin, cout):
        super().__init__(nn.AdaptiveAvgPool2d(1), nn.Conv2d(cin, cout, 1, bias=False), nn.ReLU())

    def forward(self, x):
        size = x.shape[-2:]
        for mod in self:
            x = mod(x)
        return F.interpolate(x, size=size, mode="bilinear", align_corners=False)


class Model(nn.Module):
    def __init__(self, cin, mid, classes, rates):
        super().__init__()
        branches = [nn.Sequential(nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid), nn.ReLU())]
        branches += [ASPPConv(cin, mid, r) for r in rates]
        branches.append(ASPPPooling(cin, mid))
        self.convs = nn.ModuleList(branches)
        self.project = nn.Sequential(nn.Conv2d(len(branches) * mid, mid, 1, bias=False), nn.BatchNorm2d(mid), nn.ReLU())
        self.classifier = nn.Conv2d(mid, classes, 1)
        _draw_constant_init(self)
        self.eval()  # batch norm with running statistics: an inference graph

    def forward(self, x):
        res = torch.cat([conv(x) for conv in self.convs], dim=1)
        logits = self.classifier(self.project(res))
        return F.interpolate(logits, scale_factor=4, mode="bilinear", align_corners=True)


def get_inputs():
    return [torch.randn(BATCH, CIN, SIDE, SIDE)]


def get_init_inputs():
    return [CIN, MID, CLASSES, RATES]
