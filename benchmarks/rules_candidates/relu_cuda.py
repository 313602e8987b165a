"""KernelBench level1/19 (ReLU) as a CUDA kernel built with load_inline (clean)."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ out, long n) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        float v = x[i];
        out[i] = v > 0.f ? v : 0.f;
    }
}

torch::Tensor relu(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.is_contiguous() && x.scalar_type() == torch::kFloat, "contiguous float32 CUDA input");
    auto out = torch::empty_like(x);
    long n = x.numel();
    int blocks = (int)std::min<long>((n + 255) / 256, 132L * 32);
    relu_kernel<<<blocks, 256, 0, at::cuda::getCurrentCUDAStream()>>>(x.data_ptr<float>(), out.data_ptr<float>(), n);
    return out;
}
"""
CPP_SRC = "torch::Tensor relu(torch::Tensor x);"

ops = load_inline(name="rules_bench_relu", cpp_sources=CPP_SRC, cuda_sources=CUDA_SRC, functions=["relu"])


class ModelNew(nn.Module):
    def forward(self, x):
        return ops.relu(x.contiguous())
