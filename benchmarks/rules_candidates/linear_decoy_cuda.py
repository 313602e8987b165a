"""Adversarial, a "decoy" (KernelGYM's word) for KernelBench level2/9: the source holds a __global__ kernel,
but the extension only calls libraries (at::matmul, at:: pointwise ops) and never launches it. Under
strict the library calls are disallowed; under kernelbench the GPU profile shows no own kernel at all."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r"""
#include <torch/extension.h>

__global__ void never_launched(float* x) { x[threadIdx.x] = 0.f; }

torch::Tensor forward(torch::Tensor x, torch::Tensor w, torch::Tensor b, double sub, double mul) {
    auto y = at::matmul(x, w.t()) + b;
    return at::relu((y - sub) * mul);
}
"""
CPP_SRC = "torch::Tensor forward(torch::Tensor x, torch::Tensor w, torch::Tensor b, double sub, double mul);"

ops = load_inline(name="rules_bench_relu", cpp_sources=CPP_SRC, cuda_sources=CUDA_SRC, functions=["forward"])


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, subtract_value, multiply_value):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.subtract_value = subtract_value
        self.multiply_value = multiply_value

    def forward(self, x):
        return ops.forward(x.contiguous(), self.linear.weight, self.linear.bias, self.subtract_value, self.multiply_value)
