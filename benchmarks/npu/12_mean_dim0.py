"""Mean over the first dimension (a column-wise reduction) for several shapes and dtypes."""

import os

import torch
import torch.nn as nn

CATEGORY = "reduction"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    SHAPES = [(8192, 8192), (1_000_000, 64), (4097, 3001)]
else:
    SHAPES = [(512, 128), (4096, 16), (999, 37)]
DTYPES = [torch.float32, torch.float16]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.mean(x, dim=0)


def _group(shape, dtype):
    # A random offset per column: the means then differ by far more than the fp16
    # tolerance, whereas the means of i.i.d. columns would all sit within it of
    # one constant that a kernel could return.
    return [(torch.randn(shape) + 2.0 * torch.randn(shape[-1])).to(dtype)]


def get_input_groups():
    return [_group(shape, dtype) for dtype in DTYPES for shape in SHAPES]


def get_inputs():
    return _group(SHAPES[0], DTYPES[0])


def get_init_inputs():
    return []
