"""Perceiver cross-attention: a learned latent array expanded over the batch attends to a longer input with its own width (nn.MultiheadAttention with kdim/vdim), then a latent MLP."""

import os

import torch
import torch.nn as nn

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, INPUTS, INPUT_DIM, LATENTS, LATENT_DIM, HEADS = 8, 2048, 64, 256, 512, 8
else:
    BATCH, INPUTS, INPUT_DIM, LATENTS, LATENT_DIM, HEADS = 2, 13, 6, 5, 16, 2


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
    def __init__(self, input_dim, latents, latent_dim, heads):
        super().__init__()
        self.latents = nn.Parameter(torch.randn(latents, latent_dim) * 0.5)
        self.input_norm = nn.LayerNorm(input_dim)
        self.latent_norm = nn.LayerNorm(latent_dim)
        self.attn = nn.MultiheadAttention(latent_dim, heads, kdim=input_dim, vdim=input_dim, batch_first=True)
        self.mlp = nn.Sequential(nn.LayerNorm(latent_dim), nn.Linear(latent_dim, latent_dim), nn.GELU(),
                                 nn.Linear(latent_dim, latent_dim))
        _draw_constant_init(self)

    def forward(self, x):
        z = self.latents.unsqueeze(0).expand(x.shape[0], -1, -1)
        kv = self.input_norm(x)
        z = z + self.attn(self.latent_norm(z), kv, kv, need_weights=False)[0]
        return z + self.mlp(z)


def get_inputs():
    return [torch.randn(BATCH, INPUTS, INPUT_DIM)]


def get_init_inputs():
    return [INPUT_DIM, LATENTS, LATENT_DIM, HEADS]
