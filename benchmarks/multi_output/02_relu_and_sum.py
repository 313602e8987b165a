"""ReLU returned with its row sums and its transpose: three outputs, one a view of another."""

import os
import torch
import torch.nn as nn
CATEGORY = "fusion"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")
N, D = (8192, 4096) if SIZE == "full" else (4, 8)
class Model(nn.Module):
    def forward(self, x):
        y = torch.relu(x)
        return y, y.sum(1), y.t()
def get_inputs():
    return [torch.randn(N, D)]
def get_init_inputs():
    return []
