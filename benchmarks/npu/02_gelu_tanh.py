"""GELU with the tanh approximation over several shapes, in fp32 and fp16."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "elementwise"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    SHAPES = [(8192, 8192), (16, 2048, 4096), (1000, 9999), (65_537,)]
else:
    SHAPES = [(256, 512), (4, 64, 128), (37, 999), (4097,)]
DTYPES = [torch.float32, torch.float16]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(x, approximate="tanh")


def _group(shape, dtype):
    return [(2.0 * torch.randn(shape)).to(dtype)]


def get_input_groups():
    return [_group(shape, dtype) for dtype in DTYPES for shape in SHAPES]


def get_inputs():
    return _group(SHAPES[0], DTYPES[0])


def get_init_inputs():
    return []
