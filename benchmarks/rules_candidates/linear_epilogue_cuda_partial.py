"""KernelBench level2/9 in CUDA C++: at::matmul (cuBLAS) for x @ W.T, an own kernel for bias, subtract,
multiply and ReLU (partial: the library call is disallowed under strict, allowed under kernelbench).
Its extension has the same name as relu_cuda.py's: builds are told apart by content, not by name."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void bias_sub_mul_relu_kernel(const float* __restrict__ y, const float* __restrict__ bias,
                                         float* __restrict__ out, long n, long cols, float sub, float mul) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        float v = (y[i] + bias[i % cols] - sub) * mul;
        out[i] = v > 0.f ? v : 0.f;
    }
}

torch::Tensor forward(torch::Tensor x, torch::Tensor w, torch::Tensor b, double sub, double mul) {
    auto y = at::matmul(x, w.t()).contiguous();
    auto out = torch::empty_like(y);
    long n = y.numel();
    int blocks = (int)std::min<long>((n + 255) / 256, 132L * 32);
    bias_sub_mul_relu_kernel<<<blocks, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        y.data_ptr<float>(), b.data_ptr<float>(), out.data_ptr<float>(), n, y.size(1), (float)sub, (float)mul);
    return out;
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
