"""T5-style decoder layer: RMSNorm (no mean, no bias), causal self-attention, cross-attention to encoder states under a boolean key padding mask, gated-GELU feed-forward; no score scaling, as T5 folds it into the weights."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, TGT, SRC, D_MODEL, HEADS, D_FF = 8, 128, 192, 512, 8, 1024
else:
    BATCH, TGT, SRC, D_MODEL, HEADS, D_FF = 2, 5, 7, 16, 2, 24


class T5LayerNorm(nn.Module):
    def __init__(self, hidden, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(hidden).uniform_(0.5, 1.5))
        self.variance_epsilon = eps

    def forward(self, x):
        variance = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(variance + self.variance_epsilon))


class T5Attention(nn.Module):
    def __init__(self, d_model, heads):
        super().__init__()
        self.heads, self.d_head = heads, d_model // heads
        self.q = nn.Linear(d_model, d_model, bias=False)
        self.k = nn.Linear(d_model, d_model, bias=False)
        self.v = nn.Linear(d_model, d_model, bias=False)
        self.o = nn.Linear(d_model, d_model, bias=False)
        with torch.no_grad():  # T5 scales the query weights instead of the scores
            self.q.weight.mul_(self.d_head ** -0.5)

    def shape(self, x):
        return x.view(x.size(0), -1, self.heads, self.d_head).transpose(1, 2)

    def forward(self, x, kv, bias):
        q, k, v = self.shape(self.q(x)), self.shape(self.k(kv)), self.shape(self.v(kv))
        scores = torch.matmul(q, k.transpose(3, 2)) + bias
        weights = F.softmax(scores.float(), dim=-1).type_as(scores)
        out = torch.matmul(weights, v).transpose(1, 2).contiguous().view(x.size(0), -1, self.heads * self.d_head)
        return self.o(out)


class Model(nn.Module):
    def __init__(self, d_model, heads, d_ff):
        super().__init__()
        self.norm_self, self.norm_cross, self.norm_ff = T5LayerNorm(d_model), T5LayerNorm(d_model), T5LayerNorm(d_model)
        self.self_attn = T5Attention(d_model, heads)
        self.cross_attn = T5Attention(d_model, heads)
        self.wi_0 = nn.Linear(d_model, d_ff, bias=False)
        self.wi_1 = nn.Linear(d_model, d_ff, bias=False)
        self.wo = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, hidden, encoder_states, encoder_padding_mask):
        tgt = hidden.size(1)
        min_value = torch.finfo(hidden.dtype).min
        causal = torch.triu(torch.ones(tgt, tgt, dtype=torch.bool, device=hidden.device), diagonal=1)
        self_bias = torch.zeros(tgt, tgt, dtype=hidden.dtype, device=hidden.device).masked_fill(causal, min_value)
        cross_bias = torch.zeros_like(encoder_padding_mask, dtype=hidden.dtype)
        cross_bias = cross_bias.masked_fill(encoder_padding_mask, min_value)[:, None, None, :]
        h = self.norm_self(hidden)
        hidden = hidden + self.self_attn(h, h, self_bias)
        hidden = hidden + self.cross_attn(self.norm_cross(hidden), encoder_states, cross_bias)
        h = self.norm_ff(hidden)
        return hidden + self.wo(F.gelu(self.wi_0(h), approximate="tanh") * self.wi_1(h))


def get_inputs():
    lengths = torch.randint(SRC // 2, SRC + 1, (BATCH,))
    padding = torch.arange(SRC)[None, :] >= lengths[:, None]  # True where the encoder position is padding
    return [torch.randn(BATCH, TGT, D_MODEL), torch.randn(BATCH, SRC, D_MODEL), padding]


def get_init_inputs():
    return [D_MODEL, HEADS, D_FF]
