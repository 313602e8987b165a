"""Two convolutions with ReLU returning both feature maps as a list."""

import os
import torch
import torch.nn as nn
CATEGORY = "conv"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")
B, C, S = (16, 64, 128) if SIZE == "full" else (1, 4, 8)
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(C, C, 3, padding=1)
        self.c2 = nn.Conv2d(C, 2 * C, 3, stride=2, padding=1)
    def forward(self, x):
        a = torch.relu(self.c1(x))
        b = torch.relu(self.c2(a))
        return [a, b]
def get_inputs():
    return [torch.randn(B, C, S, S)]
def get_init_inputs():
    return []
