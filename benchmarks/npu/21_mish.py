"""Mish (x * tanh(softplus(x))), in fp32 and fp16."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "elementwise"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    SHAPES = [(16384, 4096), (8192, 8192), (5000, 5121), (1, 4_000_037)]
else:
    SHAPES = [(64, 256), (128, 1024), (37, 1000), (1, 4097)]
DTYPES = [torch.float32, torch.float16]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.mish(x)


def _group(shape, dtype):
    return [(3.0 * torch.randn(shape)).to(dtype)]


def get_input_groups():
    return [_group(shape, dtype) for dtype in DTYPES for shape in SHAPES]


def get_inputs():
    return _group(SHAPES[0], DTYPES[0])


def get_init_inputs():
    return []
