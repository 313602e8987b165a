"""SwiGLU activation silu(gate) * up on two tensors, over several shapes and dtypes."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "elementwise"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    SHAPES = [(8192, 11008), (4096, 4096), (1023, 5633)]
else:
    SHAPES = [(64, 512), (128, 128), (37, 513)]
DTYPES = [torch.float32, torch.float16]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
        return F.silu(gate) * up


def _group(shape, dtype):
    return [torch.randn(shape, dtype=dtype), torch.randn(shape, dtype=dtype)]


def get_input_groups():
    return [_group(shape, dtype) for dtype in DTYPES for shape in SHAPES]


def get_inputs():
    return _group(SHAPES[0], DTYPES[0])


def get_init_inputs():
    return []
