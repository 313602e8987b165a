"""ResNet-D stem (three 3x3 convolutions), MaxPool2d with ceil_mode on an odd map, a downsampling block with an average-pool shortcut, AdaptiveAvgPool2d to a 3x3 grid and a classifier."""

import os

import torch
import torch.nn as nn

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, SIDE, WIDTH, CLASSES = 16, 225, 32, 1000
else:
    BATCH, SIDE, WIDTH, CLASSES = 2, 29, 8, 10


def _draw_constant_init(model):
    """Batch-norm scales, shifts and running statistics drawn, so no kernel can hard-code them."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.weight.uniform_(0.5, 1.5)
                m.bias.normal_(0.0, 0.1)
                m.running_mean.normal_(0.0, 0.1)
                m.running_var.uniform_(0.5, 1.5)


def conv_bn_relu(cin, cout, stride=1, relu=True):
    layers = [nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout)]
    return nn.Sequential(*(layers + [nn.ReLU(inplace=True)] if relu else layers))


class DownBlock(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.body = nn.Sequential(conv_bn_relu(cin, cout, 2), conv_bn_relu(cout, cout, relu=False))
        self.shortcut = nn.Sequential(nn.AvgPool2d(2, 2, ceil_mode=True, count_include_pad=False),
                                      nn.Conv2d(cin, cout, 1, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        return torch.relu(self.body(x) + self.shortcut(x))


class Model(nn.Module):
    def __init__(self, width, classes):
        super().__init__()
        self.stem = nn.Sequential(conv_bn_relu(3, width // 2, 2), conv_bn_relu(width // 2, width // 2),
                                  conv_bn_relu(width // 2, width))
        self.pool = nn.MaxPool2d(3, 2, padding=0, ceil_mode=True)
        self.block = DownBlock(width, 2 * width)
        self.grid = nn.AdaptiveAvgPool2d((3, 3))
        self.fc = nn.Linear(2 * width * 9, classes)
        _draw_constant_init(self)
        # a BatchNorm in training mode would normalise by the batch; the model is an inference graph
        self.eval()

    def forward(self, x):
        x = self.block(self.pool(self.stem(x)))
        return self.fc(torch.flatten(self.grid(x), 1))


def get_inputs():
    return [torch.randn(BATCH, 3, SIDE, SIDE)]


def get_init_inputs():
    return [WIDTH, CLASSES]
