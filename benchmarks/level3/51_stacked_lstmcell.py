"""Two stacked nn.LSTMCell layers unrolled over time in a Python loop (state started at zeros), a residual between layers, LayerNorm and a projection of every step's output."""

import os

import torch
import torch.nn as nn

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, STEPS, INPUT, HIDDEN, OUT = 32, 24, 128, 256, 64
else:
    BATCH, STEPS, INPUT, HIDDEN, OUT = 3, 4, 10, 12, 5


class Model(nn.Module):
    def __init__(self, input_size, hidden, out):
        super().__init__()
        self.hidden = hidden
        self.cells = nn.ModuleList([nn.LSTMCell(input_size, hidden), nn.LSTMCell(hidden, hidden)])
        self.norm = nn.LayerNorm(hidden)
        self.head = nn.Linear(hidden, out)
        with torch.no_grad():
            self.norm.weight.uniform_(0.5, 1.5)
            self.norm.bias.normal_(0.0, 0.1)

    def forward(self, x):
        batch = x.size(0)
        state = [(x.new_zeros(batch, self.hidden), x.new_zeros(batch, self.hidden)) for _ in self.cells]
        outputs = []
        for t in range(x.size(1)):
            inp = x[:, t]
            for i, cell in enumerate(self.cells):
                h, c = cell(inp, state[i])
                state[i] = (h, c)
                inp = h if i == 0 else h + inp
            outputs.append(self.head(self.norm(inp)))
        return torch.stack(outputs, dim=1)


def get_inputs():
    return [torch.randn(BATCH, STEPS, INPUT)]


def get_init_inputs():
    return [INPUT, HIDDEN, OUT]
