"""Deep & Cross network: cross layers x_{l+1} = x0 * (x_l . w_l) + b_l + x_l beside a deep MLP, both over the same input, joined by a final linear layer."""

import os

import torch
import torch.nn as nn

CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    BATCH, FEATURES, CROSS, HIDDEN = 8192, 512, 3, 1024
else:
    BATCH, FEATURES, CROSS, HIDDEN = 5, 12, 3, 16


class Model(nn.Module):
    def __init__(self, features, cross, hidden):
        super().__init__()
        self.w = nn.ParameterList([nn.Parameter(torch.randn(features, 1) * 0.1) for _ in range(cross)])
        self.b = nn.ParameterList([nn.Parameter(torch.randn(features) * 0.1) for _ in range(cross)])
        self.deep = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
        self.out = nn.Linear(features + hidden, 1)

    def forward(self, x0):
        x = x0
        for w, b in zip(self.w, self.b):
            x = x0 * (x @ w) + b + x
        return self.out(torch.cat([x, self.deep(x0)], dim=1))


def get_inputs():
    return [torch.randn(BATCH, FEATURES)]


def get_init_inputs():
    return [FEATURES, CROSS, HIDDEN]
