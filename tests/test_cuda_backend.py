"""CUDA backend without a GPU: sources captured from load_inline are compiled
with nvcc for sm_90; the verdict is `compiled` at best, never `ok`."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from backends import EvalOptions, Executor, Verdict

CASES = Path(__file__).parent / "executor_cases"
TASK = CASES / "task_add_relu.py"

CANDIDATE = '''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void add_relu_kernel(const float* x, const float* y, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i] + y[i];
        out[i] = v > 0.f ? 2.f * v : 0.f;
    }
}

torch::Tensor add_relu(torch::Tensor x, torch::Tensor y) {
    auto out = torch::empty_like(x);
    int n = x.numel();
    add_relu_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), out.data_ptr<float>(), n);
    return out;
}
"""
CPP_SRC = "torch::Tensor add_relu(torch::Tensor x, torch::Tensor y);"

ops = load_inline(name="add_relu_ext", cpp_sources=CPP_SRC, cuda_sources=CUDA_SRC, functions=["add_relu"])


class ModelNew(nn.Module):
    def forward(self, x, y):
        return ops.add_relu(x.contiguous(), y.contiguous())
'''

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def executor(tmp_path_factory):
    import os

    os.environ["EVOKERNEL_CACHE"] = str(tmp_path_factory.mktemp("cache"))
    with Executor(device="cpu", timeout_s=600) as ex:
        yield ex


@needs_nvcc
@pytest.mark.slow
def test_honest_cuda_kernel_is_compiled_not_ok(executor):
    result = executor.evaluate(TASK, CANDIDATE, backend="cuda", options=EvalOptions())
    assert result.status == Verdict.COMPILED, result.feedback
    assert result.latency_source == "none" and result.latency_ms is None
    assert any("add_relu_kernel" in k.name and k.registers for k in result.kernels)


@needs_nvcc
@pytest.mark.slow
def test_cuda_compile_error_reaches_feedback(executor):
    broken = CANDIDATE.replace("float v = x[i] + y[i];", "float v = x[i] + undefined_thing[i];")
    result = executor.evaluate(TASK, broken, backend="cuda", options=EvalOptions())
    assert result.status == Verdict.COMPILE_ERROR
    assert "undefined_thing" in result.message


@pytest.mark.parametrize(
    "change, fragment",
    [
        (("__global__ void", "__device__ void"), "no __global__ kernel"),
        (("auto out = torch::empty_like(x);", "auto out = torch::relu(x + y) * 2; return out;"), "torch::relu"),
        (("int n = x.numel();", "int n = x.numel(); cudaStream_t s; cudaStreamCreate(&s);"), "side streams"),
        (("int n = x.numel();", "int n = x.numel(); std::thread t([]{}); t.join();"), "threads"),
    ],
)
def test_cuda_static_hacks(executor, change, fragment):
    source = CANDIDATE.replace(*change)
    assert source != CANDIDATE
    result = executor.evaluate(TASK, source, backend="cuda", options=EvalOptions())
    assert result.status == Verdict.HACK, result.message
    assert fragment in result.feedback
