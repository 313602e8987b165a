"""GRU cell unrolled over a short sequence with explicit gate equations; returns every hidden state."""

import os

import torch
import torch.nn as nn

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    STEPS, BATCH, INPUT, HIDDEN = 16, 1024, 1024, 1024
else:
    STEPS, BATCH, INPUT, HIDDEN = 5, 3, 37, 50


class Model(nn.Module):
    def __init__(self, input_size: int, hidden_size: int):
        super().__init__()
        self.hidden_size = hidden_size
        # Gates stacked as [reset, update, candidate], as torch.nn.GRU orders them.
        self.input_gates = nn.Linear(input_size, 3 * hidden_size)
        self.hidden_gates = nn.Linear(hidden_size, 3 * hidden_size)

    def forward(self, x: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        outputs = []
        for t in range(x.shape[0]):
            xr, xz, xn = self.input_gates(x[t]).chunk(3, dim=-1)
            hr, hz, hn = self.hidden_gates(h).chunk(3, dim=-1)
            reset = torch.sigmoid(xr + hr)
            update = torch.sigmoid(xz + hz)
            candidate = torch.tanh(xn + reset * hn)
            h = (1.0 - update) * candidate + update * h
            outputs.append(h)
        return torch.stack(outputs)


def get_inputs():
    return [torch.randn(STEPS, BATCH, INPUT), torch.randn(BATCH, HIDDEN)]


def get_init_inputs():
    return [INPUT, HIDDEN]
