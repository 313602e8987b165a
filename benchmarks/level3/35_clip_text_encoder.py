"""CLIP-style text encoder: token and learned position embeddings, a causal mask built in forward (torch.full, triu), pre-norm layers with QuickGELU, final LayerNorm, the feature at each sequence's end token (argmax of the ids) projected."""

import os

import torch
import torch.nn as nn

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, CONTEXT, VOCAB, WIDTH, HEADS, LAYERS, EMBED = 16, 77, 49408, 512, 8, 2, 512
else:
    BATCH, CONTEXT, VOCAB, WIDTH, HEADS, LAYERS, EMBED = 2, 9, 30, 16, 2, 2, 8


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


class QuickGELU(nn.Module):
    def forward(self, x):
        return x * torch.sigmoid(1.702 * x)


class ResidualAttentionBlock(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.attn = nn.MultiheadAttention(width, heads)
        self.ln_1 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), QuickGELU(), nn.Linear(4 * width, width))
        self.ln_2 = nn.LayerNorm(width)

    def forward(self, x, mask):
        y = self.ln_1(x)
        x = x + self.attn(y, y, y, need_weights=False, attn_mask=mask)[0]
        return x + self.mlp(self.ln_2(x))


class Model(nn.Module):
    def __init__(self, context, vocab, width, heads, layers, embed):
        super().__init__()
        self.token_embedding = nn.Embedding(vocab, width)
        self.positional_embedding = nn.Parameter(torch.randn(context, width) * 0.1)
        self.blocks = nn.ModuleList([ResidualAttentionBlock(width, heads) for _ in range(layers)])
        self.ln_final = nn.LayerNorm(width)
        self.text_projection = nn.Parameter(torch.randn(width, embed) * width ** -0.5)
        _draw_constant_init(self)

    def forward(self, text):
        n = text.shape[1]
        mask = torch.full((n, n), float("-inf"), device=text.device).triu(1)
        x = (self.token_embedding(text) + self.positional_embedding).permute(1, 0, 2)
        for block in self.blocks:
            x = block(x, mask)
        x = self.ln_final(x.permute(1, 0, 2))
        return x[torch.arange(x.shape[0]), text.argmax(dim=-1)] @ self.text_projection


def get_inputs():
    return [torch.randint(0, VOCAB, (BATCH, CONTEXT))]


def get_init_inputs():
    return [CONTEXT, VOCAB, WIDTH, HEADS, LAYERS, EMBED]
