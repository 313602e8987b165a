"""2 x 2 average pooling with stride 2 over NCHW, in fp32 and fp16."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "pooling"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    SHAPES = [(64, 256, 56, 56), (128, 64, 112, 112), (32, 513, 16, 18)]
else:
    SHAPES = [(4, 16, 8, 8), (2, 32, 14, 14), (3, 5, 8, 10)]
DTYPES = [torch.float32, torch.float16]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.avg_pool2d(x, 2)


def _group(shape, dtype):
    return [torch.randn(shape).to(dtype)]


def get_input_groups():
    return [_group(shape, dtype) for dtype in DTYPES for shape in SHAPES]


def get_inputs():
    return _group(SHAPES[0], DTYPES[0])


def get_init_inputs():
    return []
