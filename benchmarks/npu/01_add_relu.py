"""Elementwise chain relu(x + y) over several shapes, in fp32 and fp16."""

import os

import torch
import torch.nn as nn

CATEGORY = "elementwise"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

# First the shapes whose rows fill whole 32-byte blocks, then awkward ones that
# leave partial blocks and odd tails for the last core.
if SIZE == "full":
    SHAPES = [(8192, 8192), (4096, 4096), (3000, 4097), (1, 16_777_217)]
else:
    SHAPES = [(64, 256), (128, 1024), (37, 1000), (1, 4097)]
DTYPES = [torch.float32, torch.float16]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.relu(x + y)


def _group(shape, dtype):
    return [torch.randn(shape, dtype=dtype), torch.randn(shape, dtype=dtype)]


def get_input_groups():
    return [_group(shape, dtype) for dtype in DTYPES for shape in SHAPES]


def get_inputs():
    return _group(SHAPES[0], DTYPES[0])


def get_init_inputs():
    return []
