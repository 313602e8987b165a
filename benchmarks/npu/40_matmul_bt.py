"""A @ B.T with B stored row-major as (N, K), in fp32 and fp16."""

import math
import os

import torch
import torch.nn as nn

CATEGORY = "matmul"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    SHAPES = [(4096, 4096, 4096), (8192, 1024, 2048), (1000, 3000, 999)]
else:
    SHAPES = [(128, 256, 64), (64, 512, 128), (37, 129, 65)]
DTYPES = [torch.float32, torch.float16]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a @ b.T


def _group(shape, dtype):
    m, k, n = shape
    return [torch.randn(m, k).to(dtype), (torch.randn(n, k) / math.sqrt(k)).to(dtype)]


def get_input_groups():
    return [_group(shape, dtype) for dtype in DTYPES for shape in SHAPES]


def get_inputs():
    return _group(SHAPES[0], DTYPES[0])


def get_init_inputs():
    return []
