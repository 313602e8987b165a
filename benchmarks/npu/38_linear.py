"""A linear layer y = x W^T + b (weight and bias given as inputs) for several shapes, in fp32 and fp16."""

import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "matmul"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    SHAPES = [(8192, 4096, 1024), (4096, 4096, 4096), (1000, 3000, 999)]
else:
    SHAPES = [(128, 256, 96), (64, 512, 64), (37, 129, 65)]
DTYPES = [torch.float32, torch.float16]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        return F.linear(x, weight, bias)


def _group(shape, dtype):
    m, k, n = shape
    return [torch.randn(m, k).to(dtype), (torch.randn(n, k) / math.sqrt(k)).to(dtype), (0.5 * torch.randn(n)).to(dtype)]


def get_input_groups():
    return [_group(shape, dtype) for dtype in DTYPES for shape in SHAPES]


def get_inputs():
    return _group(SHAPES[0], DTYPES[0])


def get_init_inputs():
    return []
