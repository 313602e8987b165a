"""MLP-Mixer block: a token-mixing MLP applied across the transposed token axis, then a channel-mixing MLP, each after LayerNorm with a residual."""

import os
import torch
import torch.nn as nn

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH_SIZE = 4
    TOKENS = 196
    CHANNELS = 256
    TOKEN_HIDDEN = 128
    CHANNEL_HIDDEN = 1024
else:
    BATCH_SIZE = 2
    TOKENS = 9
    CHANNELS = 16
    TOKEN_HIDDEN = 8
    CHANNEL_HIDDEN = 32


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


class MlpBlock(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(nn.functional.gelu(self.fc1(x)))


class Model(nn.Module):
    def __init__(self, tokens, channels, token_hidden, channel_hidden):
        super().__init__()
        self.norm1 = nn.LayerNorm(channels)
        self.token_mix = MlpBlock(tokens, token_hidden)
        self.norm2 = nn.LayerNorm(channels)
        self.channel_mix = MlpBlock(channels, channel_hidden)
        _draw_constant_init(self)

    def forward(self, x):
        x = x + self.token_mix(self.norm1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.channel_mix(self.norm2(x))


def get_inputs():
    return [torch.randn(BATCH_SIZE, TOKENS, CHANNELS)]


def get_init_inputs():
    return [TOKENS, CHANNELS, TOKEN_HIDDEN, CHANNEL_HIDDEN]
