"""Rows scaled to unit Euclidean norm (F.normalize), in fp32 and fp16."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "normalization"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    SHAPES = [(16384, 4096), (4096, 16384), (3001, 5003)]
else:
    SHAPES = [(128, 256), (64, 1024), (37, 1000)]
DTYPES = [torch.float32, torch.float16]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.normalize(x, dim=-1)


def _group(shape, dtype):
    return [(torch.randn(shape) + 0.5).to(dtype)]


def get_input_groups():
    return [_group(shape, dtype) for dtype in DTYPES for shape in SHAPES]


def get_inputs():
    return _group(SHAPES[0], DTYPES[0])


def get_init_inputs():
    return []
