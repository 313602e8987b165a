"""nn.TransformerDecoderLayer (post-norm, ReLU): causal self-attention with a square subsequent mask buffer, cross-attention on an encoder memory, feed-forward."""

import os
import torch
import torch.nn as nn

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH_SIZE = 2
    TGT_LEN = 32
    SRC_LEN = 48
    D_MODEL = 128
    NHEAD = 4
else:
    BATCH_SIZE = 2
    TGT_LEN = 6
    SRC_LEN = 7
    D_MODEL = 16
    NHEAD = 4


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


class Model(nn.Module):
    def __init__(self, d_model, nhead, tgt_len):
        super().__init__()
        self.layer = nn.TransformerDecoderLayer(d_model, nhead, 4 * d_model, dropout=0.0, batch_first=True)
        self.register_buffer("causal", nn.Transformer.generate_square_subsequent_mask(tgt_len))
        _draw_constant_init(self)

    def forward(self, tgt, memory):
        return self.layer(tgt, memory, tgt_mask=self.causal)


def get_inputs():
    return [torch.randn(BATCH_SIZE, TGT_LEN, D_MODEL), torch.randn(BATCH_SIZE, SRC_LEN, D_MODEL)]


def get_init_inputs():
    return [D_MODEL, NHEAD, TGT_LEN]
