"""Qwen2-style decoder layer: RMSNorm, attention with biased q/k/v projections, grouped-query heads (key/value heads repeated by expand and reshape, as repeat_kv), rotary embedding (rotate_half) at positions from arange, a causal sliding-window boolean mask built in forward for F.scaled_dot_product_attention, and a SwiGLU MLP."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, SEQ, HIDDEN, HEADS, KV_HEADS, WINDOW, INTER = 2, 512, 896, 14, 2, 128, 2432
else:
    BATCH, SEQ, HIDDEN, HEADS, KV_HEADS, WINDOW, INTER = 2, 11, 32, 4, 2, 4, 48


class Qwen2RMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(hidden_size) + 0.5)  # drawn: no kernel can hard-code 1
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def repeat_kv(hidden_states, n_rep):
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


class Qwen2RotaryEmbedding(nn.Module):
    def __init__(self, dim, base=1000000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        position_ids_expanded = position_ids[:, None, :].float()
        freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)


class Qwen2Attention(nn.Module):
    def __init__(self, hidden, heads, kv_heads, window):
        super().__init__()
        self.head_dim = hidden // heads
        self.num_heads, self.num_key_value_heads = heads, kv_heads
        self.num_key_value_groups = heads // kv_heads
        self.sliding_window = window
        self.q_proj = nn.Linear(hidden, heads * self.head_dim, bias=True)
        self.k_proj = nn.Linear(hidden, kv_heads * self.head_dim, bias=True)
        self.v_proj = nn.Linear(hidden, kv_heads * self.head_dim, bias=True)
        self.o_proj = nn.Linear(heads * self.head_dim, hidden, bias=False)

    def forward(self, hidden_states, cos, sin):
        bsz, q_len, _ = hidden_states.size()
        q = self.q_proj(hidden_states).view(bsz, q_len, -1, self.head_dim).transpose(1, 2)
        k = self.k_proj(hidden_states).view(bsz, q_len, -1, self.head_dim).transpose(1, 2)
        v = self.v_proj(hidden_states).view(bsz, q_len, -1, self.head_dim).transpose(1, 2)
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        q = (q * cos) + (rotate_half(q) * sin)
        k = (k * cos) + (rotate_half(k) * sin)
        k = repeat_kv(k, self.num_key_value_groups)
        v = repeat_kv(v, self.num_key_value_groups)
        idx = torch.arange(q_len, device=hidden_states.device)
        distance = idx[:, None] - idx[None, :]
        mask = (distance >= 0) & (distance < self.sliding_window)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        out = out.transpose(1, 2).reshape(bsz, q_len, -1)
        return self.o_proj(out)


class Qwen2MLP(nn.Module):
    def __init__(self, hidden, inter):
        super().__init__()
        self.gate_proj = nn.Linear(hidden, inter, bias=False)
        self.up_proj = nn.Linear(hidden, inter, bias=False)
        self.down_proj = nn.Linear(inter, hidden, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Model(nn.Module):
    def __init__(self, hidden, heads, kv_heads, window, inter):
        super().__init__()
        self.input_layernorm = Qwen2RMSNorm(hidden)
        self.self_attn = Qwen2Attention(hidden, heads, kv_heads, window)
        self.post_attention_layernorm = Qwen2RMSNorm(hidden)
        self.mlp = Qwen2MLP(hidden, inter)
        self.rotary_emb = Qwen2RotaryEmbedding(hidden // heads)

    def forward(self, hidden_states):
        position_ids = torch.arange(hidden_states.shape[1], device=hidden_states.device).unsqueeze(0)
        cos, sin = self.rotary_emb(hidden_states, position_ids)
        residual = hidden_states
        hidden_states = residual + self.self_attn(self.input_layernorm(hidden_states), cos, sin)
        residual = hidden_states
        return residual + self.mlp(self.post_attention_layernorm(hidden_states))


def get_inputs():
    return [torch.randn(BATCH, SEQ, HIDDEN)]


def get_init_inputs():
    return [HIDDEN, HEADS, KV_HEADS, WINDOW, INTER]
