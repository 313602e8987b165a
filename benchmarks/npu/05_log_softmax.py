"""Log-softmax over the last dimension for several row lengths, in fp32 and fp16."""

import os

import torch
import torch.nn as nn

CATEGORY = "softmax"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    SHAPES = [(8192, 4096), (2048, 32000), (999, 2049)]
else:
    SHAPES = [(64, 512), (16, 2048), (37, 1001)]
DTYPES = [torch.float32, torch.float16]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log_softmax(x, dim=-1)


def _group(shape, dtype):
    return [(2.0 * torch.randn(shape)).to(dtype)]


def get_input_groups():
    return [_group(shape, dtype) for dtype in DTYPES for shape in SHAPES]


def get_inputs():
    return _group(SHAPES[0], DTYPES[0])


def get_init_inputs():
    return []
