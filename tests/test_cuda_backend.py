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
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("backends._cache._root", tmp_path_factory.mktemp("cache"))  # the worker is given it
        with Executor(device="cpu", timeout_s=600) as ex:
            yield ex


@needs_nvcc
@pytest.mark.slow
def test_honest_cuda_kernel_is_compiled_not_ok(executor):
    result = executor.evaluate(TASK, CANDIDATE, backend="cuda", options=EvalOptions())
    assert result.status == Verdict.COMPILED, result.feedback
    assert result.latency_source == "none" and result.latency_ms is None
    assert any("add_relu_kernel" in k.name and k.registers for k in result.kernels)


# The broken kernel's torch wrapper is only declared in cpp_sources, which nvcc never sees without a GPU,
# so its check reads no torch headers: about a second, where the honest extension above takes a minute
# (the torch-header build is that test's subject). The C++20 bit-field initializer makes nvcc warn
# before the error, as torch's headers do (c10/core/AutogradState.h): the error is found among warnings.
BROKEN_KERNEL = '''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r"""
struct Flags { bool on : 1 = true; };

__global__ void add_relu_kernel(const float* x, const float* y, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i] + undefined_thing[i];
        out[i] = v > 0.f ? 2.f * v : 0.f;
    }
}
"""
CPP_SRC = "torch::Tensor add_relu(torch::Tensor x, torch::Tensor y);"

ops = load_inline(name="add_relu_ext", cpp_sources=CPP_SRC, cuda_sources=CUDA_SRC, functions=["add_relu"])


class ModelNew(nn.Module):
    def forward(self, x, y):
        return ops.add_relu(x.contiguous(), y.contiguous())
'''


@needs_nvcc
def test_cuda_compile_error_reaches_feedback(executor):
    assert "torch/extension.h" not in BROKEN_KERNEL
    result = executor.evaluate(TASK, BROKEN_KERNEL, backend="cuda", options=EvalOptions())
    assert result.status == Verdict.COMPILE_ERROR
    assert "undefined_thing" in result.message


@pytest.mark.parametrize(
    "change, fragment, status",
    [
        (("__global__ void", "__device__ void"), "no __global__ kernel", Verdict.DISALLOWED),
        (("auto out = torch::empty_like(x);", "auto out = torch::relu(x + y) * 2; return out;"), "torch::relu", Verdict.DISALLOWED),
        (("int n = x.numel();", "int n = x.numel(); cudaStream_t s; cudaStreamCreate(&s);"), "side streams", Verdict.HACK),
        (("int n = x.numel();", "int n = x.numel(); std::thread t([]{}); t.join();"), "threads", Verdict.HACK),
    ],
)
def test_cuda_static_rules(executor, change, fragment, status):
    source = CANDIDATE.replace(*change)
    assert source != CANDIDATE
    result = executor.evaluate(TASK, source, backend="cuda", options=EvalOptions())
    assert result.status == status, result.message
    assert fragment in result.feedback


# --- builds isolated by content (issue 20): the name a candidate picks is not an identity

# Device code only in cuda_sources (the torch wrapper would sit in cpp_sources), so nvcc takes a second.
SAME_NAME = '''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r"""
__global__ void KERNEL(const float* x, const float* y, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { BODY }
}
"""

ops = load_inline(name="fast_matmul", cpp_sources="", cuda_sources=CUDA_SRC, functions=["launch"])


class ModelNew(nn.Module):
    def forward(self, x, y):
        return ops.launch(x, y)
'''


def same_name(kernel: str, body: str) -> str:
    return SAME_NAME.replace("KERNEL", kernel).replace("BODY", body)


ADD = same_name("add_kernel", "out[i] = x[i] + y[i];")
FMA = same_name("fma_kernel", "float a = x[i], b = y[i]; out[i] = fmaf(a, b, a * a + b * b * 0.5f) / (1.0f + fabsf(a));")
BROKEN = same_name("add_kernel", "out[i] = x[i] + y[i] + not_declared;")


def test_build_digest_is_content_and_toolchain_not_name():
    from backends.cuda_backend import _module_name, build_digest

    tools = "torch 2.x|nvcc 13.0"
    a = build_digest("fast_matmul", "", "A", ["launch"], {}, tools)
    assert a == build_digest("fast_matmul", "", "A", ["launch"], {}, tools)
    assert a != build_digest("fast_matmul", "", "B", ["launch"], {}, tools)
    assert a != build_digest("fast_matmul", "", "A", ["launch"], {}, "torch 2.y|nvcc 13.0")
    assert a != build_digest("fast_matmul", "", "A", ["launch"], {"extra_cuda_cflags": ["-O3"]}, tools)
    assert _module_name("fast_matmul", a) == f"fast_matmul_{a}"
    assert _module_name("../../evil name", a).isidentifier()


def test_global_kernels_are_found_for_the_own_kernel_share():
    from backends.cuda_backend import global_kernels

    src = """
    // __global__ void commented_out()
    template <typename T> __global__ void __launch_bounds__(256) tiled(T* y) {}
    extern "C" __global__ void plain(float* x, int n) {}
    """
    assert global_kernels(src) == ["tiled", "plain"]


@needs_nvcc
def test_same_extension_name_different_sources_get_their_own_verdicts(executor):
    # Serially in one worker: each candidate's report is its own source's, and nothing is shared by name.
    add = executor.evaluate(TASK, ADD, backend="cuda", options=EvalOptions())
    broken = executor.evaluate(TASK, BROKEN, backend="cuda", options=EvalOptions())
    fma = executor.evaluate(TASK, FMA, backend="cuda", options=EvalOptions())
    again = executor.evaluate(TASK, ADD, backend="cuda", options=EvalOptions())
    assert add.status == Verdict.COMPILED and [k.name for k in add.kernels] == ["_Z10add_kernelPKfS0_Pfi"]
    assert broken.status == Verdict.COMPILE_ERROR and "not_declared" in broken.message
    assert fma.status == Verdict.COMPILED and [k.name for k in fma.kernels] == ["_Z10fma_kernelPKfS0_Pfi"]
    assert again.kernels == add.kernels


@needs_nvcc
def test_same_extension_name_concurrently_in_two_workers(tmp_path, monkeypatch):
    import threading

    monkeypatch.setattr("backends._cache._root", tmp_path / "shared-cache")  # both workers build under one cache
    results: dict[str, object] = {}

    def run(name: str, source: str) -> None:
        with Executor(device="cpu", timeout_s=300) as ex:
            results[name] = ex.evaluate(TASK, source, backend="cuda", options=EvalOptions())

    threads = [threading.Thread(target=run, args=a) for a in (("fma", FMA), ("broken", BROKEN))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results["fma"].status == Verdict.COMPILED, results["fma"].message
    assert [k.name for k in results["fma"].kernels] == ["_Z10fma_kernelPKfS0_Pfi"]
    assert results["broken"].status == Verdict.COMPILE_ERROR and "not_declared" in results["broken"].message


# --- KernelBench's side-stream kernel in our own words: cuBLAS on a stream it creates

KB_STREAM = '''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

matmul_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>
#include <cublas_v2.h>

__global__ void unused_kernel(float* x) { x[threadIdx.x] = 0.f; }

torch::Tensor matmul_cuda(torch::Tensor A, torch::Tensor B) {
    auto C = torch::empty({A.size(0), B.size(1)}, A.options());
    cudaStream_t side;
    cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
    cublasHandle_t handle;
    cublasCreate(&handle);
    cublasSetStream(handle, side);
    float one = 1.f, zero = 0.f;
    cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, B.size(1), A.size(0), A.size(1), &one,
                B.data_ptr<float>(), B.size(1), A.data_ptr<float>(), A.size(1), &zero, C.data_ptr<float>(), B.size(1));
    return C;
}
"""

module = load_inline(name="fast_matmul", cpp_sources="torch::Tensor matmul_cuda(torch::Tensor A, torch::Tensor B);",
                     cuda_sources=matmul_source, functions=["matmul_cuda"])


class ModelNew(nn.Module):
    def forward(self, A, B):
        return module.matmul_cuda(A, B)


N = 2048 * 2


def get_inputs():
    return [torch.rand(N, N), torch.rand(N, N)]


def get_init_inputs():
    return []
'''


def test_kernelbench_side_stream_kernel_is_cheating_under_both_rule_sets():
    from backends import get_backend, static_rejection

    for rules in ("strict", "kernelbench"):
        result = static_rejection(KB_STREAM, get_backend("cuda"), rules)
        assert result.status == Verdict.HACK and "side streams" in result.message, result.message
        assert "get_inputs" not in result.feedback and "torch.rand" not in result.feedback


def test_cublas_beside_an_own_kernel_is_disallowed_only_under_strict():
    from backends import get_backend, static_rejection

    partial = KB_STREAM.replace("cudaStream_t side;\n    cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);\n", "") \
                       .replace("    cublasSetStream(handle, side);\n", "")
    assert "Stream" not in partial
    strict = static_rejection(partial, get_backend("cuda"), "strict")
    assert strict.status == Verdict.DISALLOWED and "library-call" in strict.message
    assert "--rules kernelbench allows it" in strict.message
    assert static_rejection(partial, get_backend("cuda"), "kernelbench") is None
