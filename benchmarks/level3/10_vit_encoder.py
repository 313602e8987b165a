"""Vision transformer: patch embedding conv, class token, position embedding, nn.TransformerEncoder (pre-norm, GELU), final LayerNorm and a linear head on the class token."""

import os
import torch
import torch.nn as nn

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH_SIZE = 2
    IMAGE_SIZE = 64
    PATCH = 8
    EMBED = 192
    HEADS = 3
    DEPTH = 2
    CLASSES = 100
else:
    BATCH_SIZE = 2
    IMAGE_SIZE = 16
    PATCH = 4
    EMBED = 24
    HEADS = 3
    DEPTH = 2
    CLASSES = 10


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
    def __init__(self, image_size, patch, embed, heads, depth, classes):
        super().__init__()
        n = (image_size // patch) ** 2
        self.patch_embed = nn.Conv2d(3, embed, kernel_size=patch, stride=patch)
        self.cls_token = nn.Parameter(torch.randn(1, 1, embed) * 0.02)
        self.pos_embed = nn.Parameter(torch.randn(1, n + 1, embed) * 0.02)
        layer = nn.TransformerEncoderLayer(embed, heads, 4 * embed, dropout=0.0, activation="gelu",
                                           batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(embed)
        self.head = nn.Linear(embed, classes)
        _draw_constant_init(self)

    def forward(self, x):
        x = self.patch_embed(x).flatten(2).transpose(1, 2)
        cls = self.cls_token.expand(x.shape[0], -1, -1)
        x = torch.cat((cls, x), dim=1) + self.pos_embed
        x = self.norm(self.encoder(x))
        return self.head(x[:, 0])


def get_inputs():
    return [torch.randn(BATCH_SIZE, 3, IMAGE_SIZE, IMAGE_SIZE)]


def get_init_inputs():
    return [IMAGE_SIZE, PATCH, EMBED, HEADS, DEPTH, CLASSES]
