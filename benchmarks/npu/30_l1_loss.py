"""Mean absolute error over all elements, in fp32 and fp16."""

import os

import torch
import torch.nn as nn

CATEGORY = "loss"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    SHAPES = [(16384, 4096), (4096, 1000), (100_000, 37)]
else:
    SHAPES = [(128, 256), (64, 1000), (1000, 37)]
DTYPES = [torch.float32, torch.float16]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return torch.mean(torch.abs(predictions - targets))


def _group(shape, dtype):
    return [torch.randn(shape).to(dtype), (2.0 * torch.randn(shape)).to(dtype)]


def get_input_groups():
    return [_group(shape, dtype) for dtype in DTYPES for shape in SHAPES]


def get_inputs():
    return _group(SHAPES[0], DTYPES[0])


def get_init_inputs():
    return []
