"""NeRF's MLP: sinusoidal positional encoding of points and view directions (the input beside sin and cos at power-of-two frequencies, concatenated), an eight-layer ReLU trunk with the encoded point concatenated back in at a skip layer, a density head (ReLU) and a view-dependent colour branch (sigmoid), returned as one RGB-sigma tensor."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    RAYS, WIDTH, DEPTH, SKIP, POS_FREQS, DIR_FREQS = 65536, 256, 8, 4, 10, 4
else:
    RAYS, WIDTH, DEPTH, SKIP, POS_FREQS, DIR_FREQS = 40, 32, 4, 2, 4, 2


class Embedder(nn.Module):
    def __init__(self, num_freqs, include_input=True):
        super().__init__()
        self.include_input = include_input
        self.register_buffer("freq_bands", 2.0 ** torch.linspace(0.0, num_freqs - 1, num_freqs), persistent=False)

    def forward(self, x):
        out = [x] if self.include_input else []
        for freq in self.freq_bands:
            for p_fn in (torch.sin, torch.cos):
                out.append(p_fn(x * freq))
        return torch.cat(out, -1)


class Model(nn.Module):
    def __init__(self, width, depth, skip, pos_freqs, dir_freqs):
        super().__init__()
        self.skips = [skip]
        self.embed_pts = Embedder(pos_freqs)
        self.embed_dirs = Embedder(dir_freqs)
        input_ch = 3 + 3 * 2 * pos_freqs
        input_ch_views = 3 + 3 * 2 * dir_freqs
        self.pts_linears = nn.ModuleList(
            [nn.Linear(input_ch, width)]
            + [nn.Linear(width, width) if i not in self.skips else nn.Linear(width + input_ch, width)
               for i in range(depth - 1)])
        self.views_linears = nn.ModuleList([nn.Linear(input_ch_views + width, width // 2)])
        self.feature_linear = nn.Linear(width, width)
        self.alpha_linear = nn.Linear(width, 1)
        self.rgb_linear = nn.Linear(width // 2, 3)

    def forward(self, pts, viewdirs):
        input_pts = self.embed_pts(pts)
        input_views = self.embed_dirs(viewdirs / viewdirs.norm(dim=-1, keepdim=True))
        h = input_pts
        for i, layer in enumerate(self.pts_linears):
            h = F.relu(layer(h))
            if i in self.skips:
                h = torch.cat([input_pts, h], -1)
        alpha = F.relu(self.alpha_linear(h))
        feature = self.feature_linear(h)
        h = torch.cat([feature, input_views], -1)
        for layer in self.views_linears:
            h = F.relu(layer(h))
        rgb = torch.sigmoid(self.rgb_linear(h))
        return torch.cat([rgb, alpha], -1)


def get_inputs():
    return [torch.rand(RAYS, 3) * 2 - 1, torch.randn(RAYS, 3)]


def get_init_inputs():
    return [WIDTH, DEPTH, SKIP, POS_FREQS, DIR_FREQS]
