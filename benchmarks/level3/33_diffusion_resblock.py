"""Diffusion UNet residual block with its timestep embedding: sinusoidal embedding of the timesteps computed in forward, a time MLP, GroupNorm and SiLU before each 3x3 conv, the time projection added per channel, a 1x1 skip conv."""

import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, CIN, COUT, SIDE, TEMB, GROUPS = 8, 128, 256, 32, 128, 32
else:
    BATCH, CIN, COUT, SIDE, TEMB, GROUPS = 2, 8, 16, 6, 8, 4


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


def timestep_embedding(t, dim):
    half = dim // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float32, device=t.device) / half)
    args = t[:, None].float() * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


class Model(nn.Module):
    def __init__(self, cin, cout, temb, groups):
        super().__init__()
        self.temb_dim = temb
        self.time_mlp = nn.Sequential(nn.Linear(temb, 4 * temb), nn.SiLU(), nn.Linear(4 * temb, 4 * temb))
        self.norm1 = nn.GroupNorm(groups, cin)
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1)
        self.time_proj = nn.Linear(4 * temb, cout)
        self.norm2 = nn.GroupNorm(groups, cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        self.skip = nn.Conv2d(cin, cout, 1)
        _draw_constant_init(self)

    def forward(self, x, t):
        emb = self.time_mlp(timestep_embedding(t, self.temb_dim))
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.time_proj(F.silu(emb))[:, :, None, None]
        h = self.conv2(F.silu(self.norm2(h)))
        return self.skip(x) + h


def get_inputs():
    return [torch.randn(BATCH, CIN, SIDE, SIDE), torch.rand(BATCH) * 1000]


def get_init_inputs():
    return [CIN, COUT, TEMB, GROUPS]
