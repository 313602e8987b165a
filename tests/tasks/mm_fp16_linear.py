import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """fp16 F.linear with a bias and a SiLU epilogue."""

    def forward(self, x, w, b):
        return F.silu(F.linear(x, w, b))


def get_inputs():
    return [torch.randn(10, 24, dtype=torch.float16), torch.randn(18, 24, dtype=torch.float16) * 0.2,
            torch.randn(18, dtype=torch.float16)]


def get_init_inputs():
    return []
