"""relu(x W^T + b) with 2048x2048 by 2048x2048 fp32 (full-precision products)."""
import torch
import torch.nn as nn

CATEGORY = "matmul"
# fp32 products summed over K = 2048 in a different order than cuBLAS.
TOLERANCE = (1e-3, 1e-3)


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.linear(x))


def get_inputs():
    return [torch.randn(2048, 2048)]


def get_init_inputs():
    return [2048, 2048]
