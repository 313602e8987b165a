"""RMS normalisation computed in fp32 and cast back to the input dtype, gain given as input."""

import os

import torch
import torch.nn as nn

CATEGORY = "normalization"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    SHAPES = [(16384, 4096), (32768, 2048), (4000, 5120), (3001, 999)]
else:
    SHAPES = [(128, 256), (64, 1024), (37, 1000), (7, 33)]
DTYPES = [torch.float32, torch.float16]
EPS = 1e-6


class Model(nn.Module):
    def __init__(self, eps: float):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor, gain: torch.Tensor) -> torch.Tensor:
        # Statistics in fp32 whatever the storage dtype, as LLM inference stacks do.
        xf = x.float()
        normed = xf * torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return (normed * gain.float()).to(x.dtype)


def _group(shape, dtype):
    return [torch.randn(shape).to(dtype), (1.0 + 0.2 * torch.randn(shape[-1])).to(dtype)]


def get_input_groups():
    return [_group(shape, dtype) for dtype in DTYPES for shape in SHAPES]


def get_inputs():
    return _group(SHAPES[0], DTYPES[0])


def get_init_inputs():
    return [EPS]
