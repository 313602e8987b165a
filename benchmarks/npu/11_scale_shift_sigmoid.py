"""sigmoid(x * scale + shift) with per-column scale and shift broadcast over rows."""

import os

import torch
import torch.nn as nn

CATEGORY = "elementwise"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    SHAPES = [(8192, 8192), (65536, 512), (3000, 3333)]
else:
    SHAPES = [(128, 256), (512, 64), (37, 333)]
DTYPES = [torch.float32, torch.float16]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, scale: torch.Tensor, shift: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(x * scale + shift)


def _group(shape, dtype):
    cols = shape[-1]
    x = torch.randn(shape)
    scale = 1.0 + 0.5 * torch.randn(cols)
    shift = 0.5 * torch.randn(cols)
    return [t.to(dtype) for t in (x, scale, shift)]


def get_input_groups():
    return [_group(shape, dtype) for dtype in DTYPES for shape in SHAPES]


def get_inputs():
    return _group(SHAPES[0], DTYPES[0])


def get_init_inputs():
    return []
