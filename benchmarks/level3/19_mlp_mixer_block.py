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

    def forward(self, x):
        x = x + self.token_mix(self.norm1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.channel_mix(self.norm2(x))


def get_inputs():
    return [torch.randn(BATCH_SIZE, TOKENS, CHANNELS)]


def get_init_inputs():
    return [TOKENS, CHANNELS, TOKEN_HIDDEN, CHANNEL_HIDDEN]
