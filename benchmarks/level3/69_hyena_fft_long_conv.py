"""Hyena operator (order 2, as in HazyResearch's safari): an input projection to three streams, a short depthwise causal convolution, an implicit long filter (positional features through a small MLP with a learned-frequency sine activation, times an exponential decay window), the long convolution computed by torch.fft.rfft/irfft zero-padded to twice the length plus a bias term, two multiplicative gates and an output projection; in a pre-norm residual block."""

import math
import os

import torch
import torch.nn as nn

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, SEQ, DIM, FILTER_WIDTH, EMB = 4, 1024, 256, 64, 33
else:
    BATCH, SEQ, DIM, FILTER_WIDTH, EMB = 2, 16, 8, 12, 5


def fftconv(u, k, D):
    seqlen = u.shape[-1]
    fft_size = 2 * seqlen
    k_f = torch.fft.rfft(k, n=fft_size) / fft_size
    u_f = torch.fft.rfft(u.to(dtype=k.dtype), n=fft_size)
    y = torch.fft.irfft(u_f * k_f, n=fft_size, norm="forward")[..., :seqlen]
    out = y + u * D.unsqueeze(-1)
    return out.to(dtype=u.dtype)


class Sin(nn.Module):
    def __init__(self, dim, w=10):
        super().__init__()
        self.freq = nn.Parameter(w * torch.ones(1, dim))

    def forward(self, x):
        return torch.sin(self.freq * x)


class PositionalEmbedding(nn.Module):
    def __init__(self, emb_dim, seq_len):
        super().__init__()
        t = torch.linspace(0, 1, seq_len)[None, :, None]  # (1, L, 1)
        bands = (emb_dim - 1) // 2
        t_rescaled = torch.linspace(0, seq_len - 1, seq_len)[None, :, None]
        w = 2 * math.pi * t_rescaled / seq_len
        f = torch.linspace(1e-4, bands - 1, bands)[None, None]
        z = torch.exp(-1j * f * w)
        z = torch.cat([t, z.real, z.imag], dim=-1)
        self.register_buffer("z", z)
        self.register_buffer("t", t)

    def forward(self, L):
        return self.z[:, :L], self.t[:, :L]


class ExponentialModulation(nn.Module):
    def __init__(self, d_model, fast_decay_pct=0.3, slow_decay_pct=1.5, target=1e-2, shift=0.05):
        super().__init__()
        self.shift = shift
        max_decay = math.log(target) / fast_decay_pct
        min_decay = math.log(target) / slow_decay_pct
        self.register_buffer("deltas", torch.linspace(min_decay, max_decay, d_model)[None, None])

    def forward(self, t, x):
        decay = torch.exp(-t * self.deltas.abs())
        return x * (decay + self.shift)


class HyenaFilter(nn.Module):
    def __init__(self, d_model, emb_dim, order, seq_len):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(d_model))
        self.pos_emb = PositionalEmbedding(emb_dim, seq_len)
        self.implicit_filter = nn.Sequential(
            nn.Linear(emb_dim, order), Sin(order), nn.Linear(order, order), Sin(order), nn.Linear(order, d_model, bias=False))
        self.modulation = ExponentialModulation(d_model)

    def filter(self, L):
        z, t = self.pos_emb(L)
        h = self.implicit_filter(z)
        return self.modulation(t, h)


class HyenaOperator(nn.Module):
    def __init__(self, d_model, l_max, filter_order, emb_dim, short_filter_order=3):
        super().__init__()
        self.d_model = d_model
        self.in_proj = nn.Linear(d_model, 3 * d_model)
        self.out_proj = nn.Linear(d_model, d_model)
        self.short_filter = nn.Conv1d(3 * d_model, 3 * d_model, short_filter_order,
                                      padding=short_filter_order - 1, groups=3 * d_model)
        self.filter_fn = HyenaFilter(d_model, emb_dim, filter_order, l_max)

    def forward(self, u):
        l = u.size(-2)
        u = self.in_proj(u).transpose(1, 2)  # (b, 3d, l)
        uc = self.short_filter(u)[..., :l]
        x0, x1, v = uc.split(self.d_model, dim=1)
        k = self.filter_fn.filter(l)[0].transpose(0, 1)  # (d, l)
        v = v * x1
        v = fftconv(v, k, self.filter_fn.bias)
        y = (v * x0).transpose(1, 2)
        return self.out_proj(y)


class Model(nn.Module):
    def __init__(self, dim, seq, filter_width, emb):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.mixer = HyenaOperator(dim, seq, filter_width, emb)
        with torch.no_grad():  # LayerNorm's 1 and 0 and the sine's frequency 10 drawn, so no kernel can hard-code them
            self.norm.weight.uniform_(0.5, 1.5)
            self.norm.bias.normal_(0.0, 0.1)
            for m in self.modules():
                if isinstance(m, Sin):
                    m.freq.uniform_(8.0, 12.0)

    def forward(self, x):
        return x + self.mixer(self.norm(x))


def get_inputs():
    return [torch.randn(BATCH, SEQ, DIM)]


def get_init_inputs():
    return [DIM, SEQ, FILTER_WIDTH, EMB]
