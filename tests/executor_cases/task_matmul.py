"""A @ B on square matrices, with torch.rand inputs as KernelBench's level1/1 (small here)."""
import torch
import torch.nn as nn

N = 48


class Model(nn.Module):
    def forward(self, A, B):
        return torch.matmul(A, B)


def get_inputs():
    return [torch.rand(N, N), torch.rand(N, N)]


def get_init_inputs():
    return []
