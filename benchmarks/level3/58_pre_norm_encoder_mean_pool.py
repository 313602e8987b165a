"""Sentence encoder: nn.TransformerEncoder of pre-norm (norm_first=True) GELU layers with a final LayerNorm, under a key padding mask, then masked mean pooling and the last real token's state, L2-normalised."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, SEQ, D_MODEL, HEADS, FF, LAYERS = 16, 128, 256, 8, 1024, 3
else:
    BATCH, SEQ, D_MODEL, HEADS, FF, LAYERS = 3, 7, 16, 2, 24, 2


class Model(nn.Module):
    def __init__(self, d_model, heads, ff, layers):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d_model, heads, ff, dropout=0.0, activation="gelu",
                                           batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, norm=nn.LayerNorm(d_model),
                                             enable_nested_tensor=False)
        with torch.no_grad():  # LayerNorms' 1 and 0 and attention's zero biases drawn, so no kernel can hard-code them
            for m in self.modules():
                if isinstance(m, nn.LayerNorm):
                    m.weight.uniform_(0.5, 1.5)
                    m.bias.normal_(0.0, 0.1)
                elif isinstance(m, nn.MultiheadAttention):
                    m.in_proj_bias.normal_(0.0, 0.1)
                    m.out_proj.bias.normal_(0.0, 0.1)

    def forward(self, x, attention_mask):
        hidden = self.encoder(x, src_key_padding_mask=attention_mask == 0)
        weights = attention_mask.unsqueeze(-1).to(hidden.dtype)
        mean = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
        last = attention_mask.cumsum(1).argmax(1)  # the first position where the running count peaks
        last_state = hidden[torch.arange(hidden.size(0), device=hidden.device), last]
        return F.normalize(torch.cat([mean, last_state], dim=-1), dim=-1)


def get_inputs():
    lengths = torch.randint(2, SEQ + 1, (BATCH,))
    lengths[0] = SEQ
    mask = (torch.arange(SEQ)[None, :] < lengths[:, None]).long()
    return [torch.randn(BATCH, SEQ, D_MODEL), mask]


def get_init_inputs():
    return [D_MODEL, HEADS, FF, LAYERS]
