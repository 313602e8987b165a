"""GPT-NeoX-style parallel block: one input feeds causal attention with partial rotary (a quarter of each head) and a GELU MLP, both added to the residual."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, SEQ, HIDDEN, HEADS = 4, 256, 512, 8
else:
    BATCH, SEQ, HIDDEN, HEADS = 2, 9, 32, 4
ROTARY_FRACTION = 0.25


def _draw_constant_init(model):
    """Norm scales and shifts drawn instead of PyTorch's constant 1 and 0, so no kernel can hard-code them."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.LayerNorm):
                m.weight.uniform_(0.5, 1.5)
                m.bias.normal_(0.0, 0.1)


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class RotaryEmbedding(nn.Module):
    def __init__(self, dim, max_positions, base=10000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))
        freqs = torch.outer(torch.arange(max_positions).float(), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos", emb.cos(), persistent=False)
        self.register_buffer("sin", emb.sin(), persistent=False)

    def forward(self, seq_len):
        return self.cos[:seq_len], self.sin[:seq_len]


class Model(nn.Module):
    def __init__(self, hidden, heads, max_positions):
        super().__init__()
        self.heads, self.head_dim = heads, hidden // heads
        self.rot_dim = int(self.head_dim * ROTARY_FRACTION)
        self.ln_attn = nn.LayerNorm(hidden)
        self.ln_mlp = nn.LayerNorm(hidden)
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.dense = nn.Linear(hidden, hidden)
        self.fc_in = nn.Linear(hidden, 4 * hidden)
        self.fc_out = nn.Linear(4 * hidden, hidden)
        self.rotary = RotaryEmbedding(self.rot_dim, max_positions)
        _draw_constant_init(self)

    def attention(self, x):
        b, s, _ = x.shape
        qkv = self.qkv(x).view(b, s, self.heads, 3 * self.head_dim).permute(0, 2, 1, 3)
        q, k, v = qkv.split(self.head_dim, dim=-1)
        cos, sin = self.rotary(s)
        q_rot, q_pass = q[..., : self.rot_dim], q[..., self.rot_dim:]
        k_rot, k_pass = k[..., : self.rot_dim], k[..., self.rot_dim:]
        q = torch.cat((q_rot * cos + rotate_half(q_rot) * sin, q_pass), dim=-1)
        k = torch.cat((k_rot * cos + rotate_half(k_rot) * sin, k_pass), dim=-1)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.dense(out.transpose(1, 2).reshape(b, s, -1))

    def forward(self, x):
        mlp = self.fc_out(F.gelu(self.fc_in(self.ln_mlp(x))))
        return x + self.attention(self.ln_attn(x)) + mlp


def get_inputs():
    return [torch.randn(BATCH, SEQ, HIDDEN)]


def get_init_inputs():
    return [HIDDEN, HEADS, SEQ]
