"""ConvNeXt-V2 blocks: depthwise 7x7 convolution, channels-last LayerNorm, MLP with Global Response Normalization (per-channel L2 norm over space, divided by its channel mean), LayerScale and an identity DropPath at rate 0; a strided downsampling layer between."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, CIN, SIDE, DIM = 16, 96, 56, 96
else:
    BATCH, CIN, SIDE, DIM = 2, 6, 10, 8


class GRN(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.gamma = nn.Parameter(torch.randn(1, 1, 1, dim) * 0.1)
        self.beta = nn.Parameter(torch.randn(1, 1, 1, dim) * 0.1)

    def forward(self, x):
        gx = torch.norm(x, p=2, dim=(1, 2), keepdim=True)
        nx = gx / (gx.mean(dim=-1, keepdim=True) + 1e-6)
        return self.gamma * (x * nx) + self.beta + x


class DropPath(nn.Module):
    def __init__(self, drop_prob=0.0):
        super().__init__()
        self.drop_prob = drop_prob

    def forward(self, x):
        if self.drop_prob == 0.0 or not self.training:
            return x
        keep = 1 - self.drop_prob
        mask = x.new_empty((x.shape[0],) + (1,) * (x.ndim - 1)).bernoulli_(keep)
        return x * mask / keep


class LayerNorm2d(nn.LayerNorm):
    """LayerNorm over the channels of an NCHW map."""

    def forward(self, x):
        x = x.permute(0, 2, 3, 1)
        x = F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        return x.permute(0, 3, 1, 2)


class Block(nn.Module):
    def __init__(self, dim, layer_scale=1e-1):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.pwconv1 = nn.Linear(dim, 4 * dim)
        self.act = nn.GELU()
        self.grn = GRN(4 * dim)
        self.pwconv2 = nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(layer_scale * torch.rand(dim) + 0.05)
        self.drop_path = DropPath(0.0)

    def forward(self, x):
        shortcut = x
        x = self.dwconv(x).permute(0, 2, 3, 1)
        x = self.pwconv2(self.grn(self.act(self.pwconv1(self.norm(x)))))
        return shortcut + self.drop_path((self.gamma * x).permute(0, 3, 1, 2))


class Model(nn.Module):
    def __init__(self, cin, dim):
        super().__init__()
        self.stage1 = Block(cin)
        self.down = nn.Sequential(LayerNorm2d(cin, eps=1e-6), nn.Conv2d(cin, dim * 2, 2, 2))
        self.stage2 = nn.Sequential(Block(dim * 2), Block(dim * 2))
        with torch.no_grad():  # LayerNorms' 1 and 0 drawn, so no kernel can hard-code them
            for m in self.modules():
                if isinstance(m, nn.LayerNorm):
                    m.weight.uniform_(0.5, 1.5)
                    m.bias.normal_(0.0, 0.1)

    def forward(self, x):
        return self.stage2(self.down(self.stage1(x)))


def get_inputs():
    return [torch.randn(BATCH, CIN, SIDE, SIDE)]


def get_init_inputs():
    return [CIN, DIM]
