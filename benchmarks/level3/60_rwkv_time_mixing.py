"""RWKV-4 blocks: LayerNorm, time mixing (token shift by a cropping ZeroPad2d, key/value/receptance from mixes of each token and its predecessor, the WKV recurrence with a per-channel exponential decay and a bonus for the current token, kept stable by a running maximum) and channel mixing (squared ReLU, sigmoid receptance), each added to the residual."""

import os

import torch
import torch.nn as nn

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, SEQ, DIM, LAYERS = 4, 32, 256, 2
else:
    BATCH, SEQ, DIM, LAYERS = 2, 6, 16, 2


def _draw_constant_init(model):
    """Norm scales and shifts drawn instead of PyTorch's constant 1 and 0, so no kernel can hard-code them."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.LayerNorm):
                m.weight.uniform_(0.5, 1.5)
                m.bias.normal_(0.0, 0.1)


class TimeMix(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.time_decay = nn.Parameter(torch.randn(dim) * 0.5 - 1.0)
        self.time_first = nn.Parameter(torch.randn(dim) * 0.3)
        self.time_mix_k = nn.Parameter(torch.rand(1, 1, dim))
        self.time_mix_v = nn.Parameter(torch.rand(1, 1, dim))
        self.time_mix_r = nn.Parameter(torch.rand(1, 1, dim))
        self.time_shift = nn.ZeroPad2d((0, 0, 1, -1))
        self.key = nn.Linear(dim, dim, bias=False)
        self.value = nn.Linear(dim, dim, bias=False)
        self.receptance = nn.Linear(dim, dim, bias=False)
        self.output = nn.Linear(dim, dim, bias=False)

    def forward(self, x):
        B, T, C = x.size()
        xx = self.time_shift(x)
        xk = x * self.time_mix_k + xx * (1 - self.time_mix_k)
        xv = x * self.time_mix_v + xx * (1 - self.time_mix_v)
        xr = x * self.time_mix_r + xx * (1 - self.time_mix_r)
        k = self.key(xk)
        v = self.value(xv)
        r = torch.sigmoid(self.receptance(xr))

        w = -torch.exp(self.time_decay)
        u = self.time_first
        aa = torch.zeros(B, C, device=x.device, dtype=x.dtype)
        bb = torch.zeros(B, C, device=x.device, dtype=x.dtype)
        pp = torch.full((B, C), -1e38, device=x.device, dtype=x.dtype)
        outs = []
        for t in range(T):
            kt, vt = k[:, t], v[:, t]
            ww = u + kt
            p = torch.maximum(pp, ww)
            e1, e2 = torch.exp(pp - p), torch.exp(ww - p)
            outs.append((e1 * aa + e2 * vt) / (e1 * bb + e2))
            ww = pp + w
            p = torch.maximum(ww, kt)
            e1, e2 = torch.exp(ww - p), torch.exp(kt - p)
            aa = e1 * aa + e2 * vt
            bb = e1 * bb + e2
            pp = p
        wkv = torch.stack(outs, dim=1)
        return self.output(r * wkv)


class ChannelMix(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.time_shift = nn.ZeroPad2d((0, 0, 1, -1))
        self.time_mix_k = nn.Parameter(torch.rand(1, 1, dim))
        self.time_mix_r = nn.Parameter(torch.rand(1, 1, dim))
        self.key = nn.Linear(dim, 4 * dim, bias=False)
        self.receptance = nn.Linear(dim, dim, bias=False)
        self.value = nn.Linear(4 * dim, dim, bias=False)

    def forward(self, x):
        xx = self.time_shift(x)
        xk = x * self.time_mix_k + xx * (1 - self.time_mix_k)
        xr = x * self.time_mix_r + xx * (1 - self.time_mix_r)
        k = torch.square(torch.relu(self.key(xk)))
        return torch.sigmoid(self.receptance(xr)) * self.value(k)


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.ln2 = nn.LayerNorm(dim)
        self.att = TimeMix(dim)
        self.ffn = ChannelMix(dim)

    def forward(self, x):
        x = x + self.att(self.ln1(x))
        return x + self.ffn(self.ln2(x))


class Model(nn.Module):
    def __init__(self, dim, layers):
        super().__init__()
        self.blocks = nn.Sequential(*[Block(dim) for _ in range(layers)])
        self.ln_out = nn.LayerNorm(dim)
        _draw_constant_init(self)

    def forward(self, x):
        return self.ln_out(self.blocks(x))


def get_inputs():
    return [torch.randn(BATCH, SEQ, DIM)]


def get_init_inputs():
    return [DIM, LAYERS]
