"""Maximum over the last dimension for several shapes, in fp32 and fp16."""

import os

import torch
import torch.nn as nn

CATEGORY = "reduction"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    SHAPES = [(8192, 8192), (131072, 128), (16, 2_000_001), (3001, 1023)]
else:
    SHAPES = [(128, 512), (1024, 32), (3, 30_001), (37, 1023)]
DTYPES = [torch.float32, torch.float16]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.amax(x, dim=-1)


def _group(shape, dtype):
    # All negative, so a kernel that starts its running max at 0 instead of -inf fails.
    return [(torch.randn(shape) - 6.0).to(dtype)]


def get_input_groups():
    return [_group(shape, dtype) for dtype in DTYPES for shape in SHAPES]


def get_inputs():
    return _group(SHAPES[0], DTYPES[0])


def get_init_inputs():
    return []
