"""wav2vec 2.0-style feature encoder: strided 1-d convolutions over raw audio (GroupNorm with a group per channel on the first), GELU, transpose, LayerNorm and a projection."""

import os
import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH_SIZE = 2
    SAMPLES = 16000
    CONV_DIM = 128
else:
    BATCH_SIZE = 2
    SAMPLES = 200
    CONV_DIM = 16


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


class Model(nn.Module):
    def __init__(self, conv_dim):
        super().__init__()
        spec = [(10, 5), (3, 2), (3, 2), (2, 2)]
        layers = []
        for i, (k, s) in enumerate(spec):
            cin = 1 if i == 0 else conv_dim
            conv = nn.Conv1d(cin, conv_dim, k, stride=s, bias=False)
            if i == 0:
                layers.append(nn.Sequential(conv, nn.GroupNorm(conv_dim, conv_dim, affine=True), nn.GELU()))
            else:
                layers.append(nn.Sequential(conv, nn.GELU()))
        self.layers = nn.ModuleList(layers)
        self.proj_norm = nn.LayerNorm(conv_dim)
        self.proj = nn.Linear(conv_dim, 2 * conv_dim)
        _draw_constant_init(self)

    def forward(self, wav):
        x = wav[:, None]
        for layer in self.layers:
            x = layer(x)
        x = x.transpose(1, 2)
        return self.proj(self.proj_norm(x))


def get_inputs():
    return [torch.randn(BATCH_SIZE, SAMPLES)]


def get_init_inputs():
    return [CONV_DIM]
