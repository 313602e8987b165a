"""Global average pooling over the spatial dims of NCHW, in fp32 and fp16."""

import os

import torch
import torch.nn as nn

CATEGORY = "pooling"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    SHAPES = [(64, 256, 56, 56), (128, 64, 112, 112), (32, 513, 15, 17)]
else:
    SHAPES = [(4, 16, 8, 8), (2, 32, 14, 14), (3, 5, 7, 9)]
DTYPES = [torch.float32, torch.float16]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.mean(dim=(2, 3))


def _group(shape, dtype):
    return [(torch.randn(shape) + torch.randn(shape[0], shape[1], 1, 1)).to(dtype)]


def get_input_groups():
    return [_group(shape, dtype) for dtype in DTYPES for shape in SHAPES]


def get_inputs():
    return _group(SHAPES[0], DTYPES[0])


def get_init_inputs():
    return []
