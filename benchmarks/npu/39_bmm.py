"""Batched matrix multiplication for several shapes, in fp32 and fp16."""

import math
import os

import torch
import torch.nn as nn

CATEGORY = "matmul"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    SHAPES = [(32, 512, 512, 512), (8, 1024, 2048, 512), (16, 333, 257, 129)]
else:
    SHAPES = [(4, 64, 128, 32), (2, 96, 64, 80), (3, 37, 65, 33)]
DTYPES = [torch.float32, torch.float16]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.bmm(a, b)


def _group(shape, dtype):
    bsz, m, k, n = shape
    return [torch.randn(bsz, m, k).to(dtype), (torch.randn(bsz, k, n) / math.sqrt(k)).to(dtype)]


def get_input_groups():
    return [_group(shape, dtype) for dtype in DTYPES for shape in SHAPES]


def get_inputs():
    return _group(SHAPES[0], DTYPES[0])


def get_init_inputs():
    return []
