"""Attention decoder: additive (Bahdanau) attention over encoder states and a GRUCell, unrolled for a fixed number of steps, each step's output fed back."""

import os
import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH_SIZE = 4
    SRC_LEN = 20
    STEPS = 6
    HIDDEN = 128
else:
    BATCH_SIZE = 2
    SRC_LEN = 5
    STEPS = 3
    HIDDEN = 16


class Model(nn.Module):
    def __init__(self, hidden, steps):
        super().__init__()
        self.steps = steps
        self.cell = nn.GRUCell(2 * hidden, hidden)
        self.attn_w = nn.Linear(hidden, hidden, bias=False)
        self.attn_u = nn.Linear(hidden, hidden)
        self.v = nn.Linear(hidden, 1, bias=False)
        self.out = nn.Linear(2 * hidden, hidden)

    def forward(self, enc, h):
        keys = self.attn_u(enc)
        y = torch.zeros_like(h)
        outs = []
        for _ in range(self.steps):
            e = self.v(torch.tanh(keys + self.attn_w(h).unsqueeze(1))).squeeze(-1)
            a = F.softmax(e, dim=1)
            ctx = torch.bmm(a.unsqueeze(1), enc).squeeze(1)
            h = self.cell(torch.cat([y, ctx], dim=-1), h)
            y = torch.tanh(self.out(torch.cat([h, ctx], dim=-1)))
            outs.append(y)
        return torch.stack(outs, dim=1)


def get_inputs():
    return [torch.randn(BATCH_SIZE, SRC_LEN, HIDDEN), torch.randn(BATCH_SIZE, HIDDEN)]


def get_init_inputs():
    return [HIDDEN, STEPS]
