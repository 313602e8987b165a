import torch
import torch.nn as nn
import torch.nn.functional as F

batch = 3
dim = 29


class Model(nn.Module):
    """A long chain of unary activations and a tanh-GELU, in modules and functions."""

    def __init__(self):
        super().__init__()
        self.act = nn.Sequential(nn.ELU(alpha=0.7), nn.Hardswish(), nn.Softplus(beta=2.0, threshold=5.0))

    def forward(self, x):
        y = self.act(x)
        y = torch.sqrt(y.abs() + 1.0) - torch.rsqrt(y * y + 2.0)
        y = y.pow(3) + torch.log(y.square() + 1.5) + (-y)
        y = F.silu(y) + F.gelu(y, approximate="tanh") + torch.tanh(y) + F.mish(y)
        y = F.hardsigmoid(y) + F.selu(y) + F.relu6(y * 4.0) + torch.sigmoid(y)
        return y.clamp(min=-5.0)


def get_inputs():
    return [torch.randn(batch, dim)]


def get_init_inputs():
    return []
