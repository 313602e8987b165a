"""GPT-2 block as its original code writes it: Conv1D layers (addmm on a flattened view), a causal mask buffer sliced by the sequence length, masked scores, an nn.Softmax built inside forward, tanh-approximated GELU."""

import os
import math
import torch
import torch.nn as nn

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH_SIZE = 2
    N_CTX = 128
    N_EMBD = 256
    N_HEAD = 4
else:
    BATCH_SIZE = 2
    N_CTX = 12
    N_EMBD = 32
    N_HEAD = 4


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


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class Conv1D(nn.Module):
    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.randn(nx, nf) * 0.02)
        self.bias = nn.Parameter(torch.zeros(nf))

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return x.view(size_out)


class Attention(nn.Module):
    def __init__(self, nx, n_ctx, n_head):
        super().__init__()
        self.register_buffer("bias", torch.tril(torch.ones(n_ctx, n_ctx)).view(1, 1, n_ctx, n_ctx))
        self.n_head = n_head
        self.split_size = nx
        self.c_attn = Conv1D(3 * nx, nx)
        self.c_proj = Conv1D(nx, nx)

    def split_heads(self, x, k=False):
        new_shape = x.size()[:-1] + (self.n_head, x.size(-1) // self.n_head)
        x = x.view(*new_shape)
        return x.permute(0, 2, 3, 1) if k else x.permute(0, 2, 1, 3)

    def forward(self, x):
        x = self.c_attn(x)
        query, key, value = x.split(self.split_size, dim=2)
        query, key, value = self.split_heads(query), self.split_heads(key, k=True), self.split_heads(value)
        w = torch.matmul(query, key) / math.sqrt(value.size(-1))
        nd, ns = w.size(-2), w.size(-1)
        mask = self.bias[:, :, ns - nd:ns, :ns]
        w = w * mask - 1e4 * (1 - mask)
        w = nn.Softmax(dim=-1)(w)
        a = torch.matmul(w, value).permute(0, 2, 1, 3).contiguous()
        a = a.view(*a.size()[:-2], a.size(-2) * a.size(-1))
        return self.c_proj(a)


class Model(nn.Module):
    def __init__(self, n_embd, n_ctx, n_head):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd, eps=1e-5)
        self.attn = Attention(n_embd, n_ctx, n_head)
        self.ln_2 = nn.LayerNorm(n_embd, eps=1e-5)
        self.c_fc = Conv1D(4 * n_embd, n_embd)
        self.c_proj = Conv1D(n_embd, 4 * n_embd)
        _draw_constant_init(self)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.c_proj(gelu_new(self.c_fc(self.ln_2(x))))


def get_inputs():
    return [torch.randn(BATCH_SIZE, N_CTX, N_EMBD)]


def get_init_inputs():
    return [N_EMBD, N_CTX, N_HEAD]
