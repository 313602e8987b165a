"""Speech front end and decoder: strided Conv1d layers with GroupNorm and GELU down to frames, a gated (GLU) context convolution, then ConvTranspose1d layers back to the waveform rate."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, SAMPLES, CHANNELS, GROUPS = 8, 16000, 128, 16
else:
    BATCH, SAMPLES, CHANNELS, GROUPS = 2, 203, 12, 3


class Model(nn.Module):
    def __init__(self, channels, groups):
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Conv1d(1, channels, 10, stride=5, bias=False), nn.GroupNorm(groups, channels), nn.GELU(),
            nn.Conv1d(channels, channels, 4, stride=2, padding=1), nn.GroupNorm(groups, channels), nn.GELU(),
            nn.Conv1d(channels, channels, 3, stride=2, padding=1), nn.GELU())
        self.context = nn.Conv1d(channels, 2 * channels, 5, padding=2)
        self.decoder = nn.Sequential(
            nn.ConvTranspose1d(channels, channels, 4, stride=2, padding=1), nn.GELU(),
            nn.ConvTranspose1d(channels, channels // 2, 4, stride=2, padding=1, output_padding=0), nn.GELU(),
            nn.ConvTranspose1d(channels // 2, 1, 10, stride=5))
        with torch.no_grad():  # GroupNorm's 1 and 0 drawn, so no kernel can hard-code them
            for m in self.modules():
                if isinstance(m, nn.GroupNorm):
                    m.weight.uniform_(0.5, 1.5)
                    m.bias.normal_(0.0, 0.1)

    def forward(self, wav):
        frames = self.encoder(wav.unsqueeze(1))
        frames = frames + F.glu(self.context(frames), dim=1)
        return torch.tanh(self.decoder(frames)).squeeze(1)


def get_inputs():
    return [torch.randn(BATCH, SAMPLES)]


def get_init_inputs():
    return [CHANNELS, GROUPS]
