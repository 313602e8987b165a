"""Layer normalisation over the last dimension with weight and bias given as inputs."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

CATEGORY = "normalization"
SIZE = os.environ.get("EVOKERNEL_SIZE", "full")

if SIZE == "full":
    SHAPES = [(16384, 4096), (65536, 1024), (5000, 5120), (3000, 1001)]
else:
    SHAPES = [(128, 256), (64, 1024), (37, 1000), (5, 77)]
DTYPES = [torch.float32, torch.float16]
EPS = 1e-5


class Model(nn.Module):
    def __init__(self, eps: float):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, (x.shape[-1],), weight, bias, self.eps)


def _group(shape, dtype):
    hidden = shape[-1]
    x = 2.0 * torch.randn(shape) + 0.5
    weight = 1.0 + 0.2 * torch.randn(hidden)
    bias = 0.2 * torch.randn(hidden)
    return [t.to(dtype) for t in (x, weight, bias)]


def get_input_groups():
    return [_group(shape, dtype) for dtype in DTYPES for shape in SHAPES]


def get_inputs():
    return _group(SHAPES[0], DTYPES[0])


def get_init_inputs():
    return [EPS]
