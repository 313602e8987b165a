"""A two-layer LSTM returning what nn.LSTM returns: (output, (h_n, c_n))."""

import os
import torch
import torch.nn as nn
CATEGORY = "network"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")
B, T, I, H = (32, 64, 128, 256) if SIZE == "full" else (2, 3, 4, 8)
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(I, H, num_layers=2, batch_first=True)
    def forward(self, x):
        return self.lstm(x)
def get_inputs():
    return [torch.randn(B, T, I)]
def get_init_inputs():
    return []
