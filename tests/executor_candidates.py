"""Candidate sources for the executor tests: honest kernels that must pass and
hacks (the anti-hack rules the README lists) that must be rejected.

Each honest kernel is a real Triton kernel in tutorial style: masked loads and
stores, strides passed explicitly, checked here on awkward shapes.
"""

HEADER = """
import torch
import torch.nn as nn
import triton
import triton.language as tl
"""

ADD_RELU_KERNEL = """
@triton.jit
def add_relu_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(x + y, 0.0) * 2.0, mask=mask)


def add_relu(x, y):
    x = x.contiguous()
    y = y.contiguous()
    out = torch.empty_like(x)
    n = x.numel()
    add_relu_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    return out
"""

# A tiled fp32 matmul in tutorial style (exact: input_precision="ieee").
MATMUL_KERNEL = """
@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak,
                    mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn,
                    mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b, input_precision="ieee")
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def matmul(a, b):
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    grid = (triton.cdiv(M, 16), triton.cdiv(N, 16))
    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                        BLOCK_M=16, BLOCK_N=16, BLOCK_K=16)
    return c
"""

KB_TAIL = """

N = 2048 * 2


def get_inputs():
    A = torch.rand(N, N)
    B = torch.rand(N, N)
    return [A, B]


def get_init_inputs():
    return []
"""

# --- honest kernels: (task file, source) -----------------------------------
HONEST = {
    "add_relu": ("task_add_relu.py", HEADER + ADD_RELU_KERNEL + """
class ModelNew(nn.Module):
    def forward(self, x, y):
        return add_relu(x, y)
"""),
    # Two launches and an intermediate buffer from torch.empty.
    "two_launches": ("task_add_relu.py", HEADER + """
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@triton.jit
def relu_scale_kernel(x_ptr, out_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0) * scale, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x, y):
        x, y = x.contiguous(), y.contiguous()
        n = x.numel()
        tmp = torch.empty(x.shape, dtype=x.dtype, device=x.device)
        out = torch.empty_like(x)
        grid = (triton.cdiv(n, 512),)
        add_kernel[grid](x, y, tmp, n, BLOCK=512)
        relu_scale_kernel[grid](tmp, out, n, 2.0, BLOCK=512)
        return out
"""),
    # Broadcasting a learned bias by index arithmetic; a Python scalar argument.
    "bias_broadcast": ("task_bias_scale.py", HEADER + """
@triton.jit
def scale_bias_kernel(x_ptr, bias_ptr, out_ptr, n_rows, n_cols, stride_row, scale, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_row + cols, mask=mask)
    b = tl.load(bias_ptr + cols, mask=mask)
    tl.store(out_ptr + row * n_cols + cols, x * scale + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, features, scale):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(features))
        self.scale = scale

    def forward(self, x):
        out = torch.empty_like(x)
        rows, cols = x.shape
        scale_bias_kernel[(rows, triton.cdiv(cols, 64))](x, self.bias, out, rows, cols, x.stride(0), self.scale, BLOCK=64)
        return out
"""),
    # A row softmax over a 3-D input through a view.
    "row_softmax": ("task_row_softmax.py", HEADER + """
@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, stride_row, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_row + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out_ptr + row * n_cols + cols, num / tl.sum(num, axis=0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        rows = x.reshape(-1, x.shape[-1])
        out = torch.empty_like(rows)
        n_rows, n_cols = rows.shape
        softmax_kernel[(n_rows,)](rows, out, n_cols, rows.stride(0), BLOCK=triton.next_power_of_2(n_cols))
        return out.view(x.shape)
"""),
    # Strided access to a transposed view, no copy.
    "transpose_view": ("task_transpose_add.py", HEADER + """
@triton.jit
def add_2d_kernel(a_ptr, b_ptr, out_ptr, M, N, stride_am, stride_an, stride_bm, stride_bn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    a = tl.load(a_ptr + rm[:, None] * stride_am + rn[None, :] * stride_an, mask=mask)
    b = tl.load(b_ptr + rm[:, None] * stride_bm + rn[None, :] * stride_bn, mask=mask)
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], a + b, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x, y):
        a = x.t()
        M, N = a.shape
        out = torch.empty((M, N), dtype=x.dtype, device=x.device)
        grid = (triton.cdiv(M, 32), triton.cdiv(N, 32))
        add_2d_kernel[grid](a, y, out, M, N, a.stride(0), a.stride(1), y.stride(0), y.stride(1), BLOCK_M=32, BLOCK_N=32)
        return out
"""),
    # Linear + relu with the weights of an nn.Linear built in the same order.
    "linear_relu": ("task_linear_relu.py", HEADER + """
@triton.jit
def linear_relu_kernel(x_ptr, w_ptr, b_ptr, out_ptr, M, N, K,
                       stride_xm, stride_xk, stride_wn, stride_wk,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(x_ptr + rm[:, None] * stride_xm + rk[None, :] * stride_xk,
                    mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        w = tl.load(w_ptr + rn[None, :] * stride_wn + rk[:, None] * stride_wk,
                    mask=(rn[None, :] < N) & (rk[:, None] < K), other=0.0)
        acc += tl.dot(a, w, input_precision="ieee")
    bias = tl.load(b_ptr + rn, mask=rn < N, other=0.0)
    acc = tl.maximum(acc + bias[None, :], 0.0)
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        w, b = self.linear.weight, self.linear.bias
        M, K = x.shape
        N = w.shape[0]
        out = torch.empty((M, N), dtype=x.dtype, device=x.device)
        grid = (triton.cdiv(M, 16), triton.cdiv(N, 16))
        linear_relu_kernel[grid](x, w, b, out, M, N, K, x.stride(0), x.stride(1), w.stride(0), w.stride(1),
                                 BLOCK_M=16, BLOCK_N=16, BLOCK_K=16)
        return out
"""),
    # A KernelBench-style answer: the task's sizes and get_inputs repeated in the file (torch.rand and all).
    "kb_style_matmul": ("task_matmul.py", HEADER + MATMUL_KERNEL + """

class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return matmul(A.contiguous(), B.contiguous())
""" + KB_TAIL),
}

_FORWARD_OK = """
class ModelNew(nn.Module):
    def forward(self, x, y):
        return add_relu(x, y)
"""

# --- cheating (`hack` under every rule set): name -> (task file, source, rule the message must mention)
HACKS = {
    "inherits_reference": ("task_add_relu.py", HEADER + ADD_RELU_KERNEL + """
from task_add_relu import Model


class ModelNew(Model):
    pass
""", "reference"),
    "finds_reference_in_sys_modules": ("task_add_relu.py", HEADER + ADD_RELU_KERNEL + """
import sys


class ModelNew(nn.Module):
    def forward(self, x, y):
        for mod in list(sys.modules.values()):
            if hasattr(mod, "get_init_inputs"):
                return mod.Model()(x, y)
        return add_relu(x, y)
""", "sys.modules"),
    "thread": ("task_add_relu.py", HEADER + ADD_RELU_KERNEL + """
import threading


class ModelNew(nn.Module):
    def forward(self, x, y):
        out = [None]
        t = threading.Thread(target=lambda: out.__setitem__(0, add_relu(x, y)))
        t.start()
        t.join()
        return out[0]
""", "threading"),
    "side_stream": ("task_add_relu.py", HEADER + ADD_RELU_KERNEL + """
class ModelNew(nn.Module):
    def forward(self, x, y):
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            return add_relu(x, y)
""", "stream"),
    "patched_timer": ("task_add_relu.py", HEADER + ADD_RELU_KERNEL + """
torch.cuda.Event.elapsed_time = lambda self, other: 0.001


class ModelNew(nn.Module):
    def forward(self, x, y):
        return add_relu(x, y)
""", "elapsed_time"),
    "patched_time_module": ("task_add_relu.py", HEADER + ADD_RELU_KERNEL + """
import time

time.perf_counter = lambda: 0.0
""" + _FORWARD_OK, "time"),
    "tensor_subclass": ("task_add_relu.py", HEADER + ADD_RELU_KERNEL + """
class Lazy(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return super().__torch_function__(func, types, args, kwargs or {})


class ModelNew(nn.Module):
    def forward(self, x, y):
        return add_relu(x, y).as_subclass(Lazy)
""", "subclass"),
    "eval_code": ("task_add_relu.py", HEADER + ADD_RELU_KERNEL + """
class ModelNew(nn.Module):
    def forward(self, x, y):
        return eval("torch.relu(x + y) * 2")
""", "eval"),
    "computed_getattr": ("task_add_relu.py", HEADER + ADD_RELU_KERNEL + """
class ModelNew(nn.Module):
    def forward(self, x, y):
        fn = getattr(torch, "re" + "lu")
        add_relu(x, y)
        return fn(x + y) * 2
""", "getattr"),
    "global_tf32_switch": ("task_add_relu.py", HEADER + ADD_RELU_KERNEL + """
torch.backends.cuda.matmul.allow_tf32 = True
""" + _FORWARD_OK, "patching"),
    "ctypes_pointer": ("task_add_relu.py", HEADER + ADD_RELU_KERNEL + """
import ctypes
""" + _FORWARD_OK, "ctypes"),
    "reseeds_rng": ("task_add_relu.py", HEADER + ADD_RELU_KERNEL + """
torch.manual_seed(0)
""" + _FORWARD_OK, "manual_seed"),
    "returns_cached_output": ("task_add_relu.py", HEADER + ADD_RELU_KERNEL + """
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.cache = {}

    def forward(self, x, y):
        key = (tuple(x.shape), float(x.flatten()[0]))
        if key not in self.cache:
            self.cache[key] = add_relu(x, y)
        add_relu(x[:1], y[:1])
        return self.cache[key]
""", "earlier call"),
    # KernelBench's adversarial kernels, in our own words and in Triton so they run here; each file
    # repeats the task's N and get_inputs (with torch.rand), which the static rules must ignore.
    "kb_zeroed_inputs": ("task_matmul.py", HEADER + """
@triton.jit
def zero_kernel(a_ptr, b_ptr, c_ptr, n_in, n_out, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    zero = tl.zeros((BLOCK,), dtype=tl.float32)
    tl.store(a_ptr + offs, zero, mask=offs < n_in)
    tl.store(b_ptr + offs, zero, mask=offs < n_in)
    tl.store(c_ptr + offs, zero, mask=offs < n_out)


class ModelNew(nn.Module):
    def forward(self, A, B):
        C = torch.empty((A.shape[0], B.shape[1]), dtype=A.dtype, device=A.device)
        n = max(A.numel(), C.numel())
        zero_kernel[(triton.cdiv(n, 1024),)](A, B, C, A.numel(), C.numel(), BLOCK=1024)
        return C
""" + KB_TAIL, "writes into its input"),
    "kb_uninitialised_output": ("task_matmul.py", HEADER + """
@triton.jit
def touch_kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.zeros((BLOCK,), dtype=tl.float32))


class ModelNew(nn.Module):
    def forward(self, A, B):
        C = torch.empty((A.shape[0], B.shape[1]), dtype=A.dtype, device=A.device)
        scratch = torch.empty(16, dtype=A.dtype, device=A.device)
        touch_kernel[(1,)](scratch, BLOCK=16)  # a launch, so that something ran; C is never written
        return C
""" + KB_TAIL, "never written"),
    "kb_side_stream_at_runtime": ("task_matmul.py", HEADER + MATMUL_KERNEL + """

class ModelNew(nn.Module):
    def forward(self, A, B):
        cuda = torch.cuda  # a local alias: the static rules do not follow it, the runtime guard does
        with cuda.stream(None):
            return matmul(A, B)
""" + KB_TAIL, "side stream"),
    "reduced_precision_cast": ("task_matmul.py", HEADER + MATMUL_KERNEL + """

class ModelNew(nn.Module):
    def forward(self, A, B):
        return matmul(A.half(), B.half()).float()
""", "lower precision"),
    "output_reused_across_calls": ("task_add_relu.py", HEADER + ADD_RELU_KERNEL + """
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.saved = {}

    def forward(self, x, y):
        out = add_relu(x, y)  # a real launch on every call
        key = tuple(x.shape)
        if key not in self.saved:
            self.saved[key] = out.clone()
        return self.saved[key].clone()
""", "earlier call"),
}

# --- breaking the rule set without cheating: name -> (task file, source, rule the message must mention).
# Under strict every one is `disallowed`; EXPECTED_KERNELBENCH says what `--rules kernelbench` makes of them.
DISALLOWED = {
    "try_except_fallback": ("task_add_relu.py", HEADER + ADD_RELU_KERNEL + """
class ModelNew(nn.Module):
    def forward(self, x, y):
        try:
            return add_relu(x, y)
        except Exception:
            return torch.relu(x + y) * 2
""", "try/except"),
    "torch_op_in_forward": ("task_add_relu.py", HEADER + ADD_RELU_KERNEL + """
class ModelNew(nn.Module):
    def forward(self, x, y):
        return torch.relu(x + y) * 2
""", "torch.relu"),
    "tensor_methods_compute": ("task_add_relu.py", HEADER + ADD_RELU_KERNEL + """
class ModelNew(nn.Module):
    def forward(self, x, y):
        add_relu(x[:1], y[:1])  # a token launch so that something ran
        return x.add(y).clamp_min(0).mul(2)
""", "aten.add"),
    "functional_call": ("task_add_relu.py", HEADER + ADD_RELU_KERNEL + """
import torch.nn.functional as F


class ModelNew(nn.Module):
    def forward(self, x, y):
        add_relu(x, y)
        return F.relu(x + y) * 2
""", "torch.nn.functional.relu"),
    "no_kernel_at_all": ("task_add_relu.py", """
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x, y):
        out = torch.empty_like(x)
        out.copy_(x)
        return out
""", "@triton.jit"),
    "kernel_never_launched": ("task_add_relu.py", HEADER + ADD_RELU_KERNEL + """
class ModelNew(nn.Module):
    def forward(self, x, y):
        out = torch.empty_like(x)
        out.copy_(x)
        return out
""", "launched none"),
    "torch_compile": ("task_add_relu.py", HEADER + ADD_RELU_KERNEL + """
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.fn = torch.compile(lambda x, y: torch.relu(x + y) * 2)

    def forward(self, x, y):
        return self.fn(x, y)
""", "torch.compile"),
    "numpy_on_host": ("task_add_relu.py", HEADER + ADD_RELU_KERNEL + """
import numpy as np


class ModelNew(nn.Module):
    def forward(self, x, y):
        add_relu(x[:1], y[:1])
        return torch.as_tensor(np.maximum(x.cpu().numpy() + y.cpu().numpy(), 0) * 2).to(x.device)
""", "numpy"),
    "submodule_call": ("task_linear_relu.py", HEADER + """
@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        h = self.linear(x)  # cuBLAS does the matmul: not the candidate's kernel
        out = torch.empty_like(h)
        relu_kernel[(triton.cdiv(h.numel(), 256),)](h, out, h.numel(), BLOCK=256)
        return out
""", "aten."),
}

# Verdicts under --rules kernelbench: library calls beside an own kernel that runs are allowed there.
EXPECTED_KERNELBENCH = {
    "try_except_fallback": "disallowed",  # a fallback path is outside both rule sets
    "torch_op_in_forward": "disallowed",  # no own kernel runs
    "tensor_methods_compute": "ok",  # a token own launch beside torch ops: allowed (its own-kernel share is what tells)
    "functional_call": "ok",
    "no_kernel_at_all": "disallowed",
    "kernel_never_launched": "disallowed",
    "torch_compile": "disallowed",
    "numpy_on_host": "ok",
    "submodule_call": "ok",  # nn.Linear (cuBLAS on a GPU) plus an own epilogue kernel: KernelBench's "partial" kernel
}

# Candidates that are honest in intent but wrong: (task, source, expected status, message fragment)
FAILURES = {
    "wrong_math": ("task_add_relu.py", HEADER + """
@triton.jit
def k(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x, y):
        out = torch.empty_like(x)
        k[(triton.cdiv(x.numel(), 256),)](x, y, out, x.numel(), BLOCK=256)
        return out
""", "wrong_result", "differs"),
    "half_written": ("task_add_relu.py", HEADER + """
@triton.jit
def k(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n // 2
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(x + y, 0.0) * 2.0, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x, y):
        out = torch.empty_like(x)
        k[(triton.cdiv(x.numel(), 256),)](x, y, out, x.numel(), BLOCK=256)
        return out
""", "wrong_result", ""),
    "wrong_shape": ("task_add_relu.py", HEADER + ADD_RELU_KERNEL + """
class ModelNew(nn.Module):
    def forward(self, x, y):
        return add_relu(x, y).reshape(-1)
""", "wrong_result", "shape"),
    "syntax_error": ("task_add_relu.py", HEADER + """
class ModelNew(nn.Module)
    pass
""", "compile_error", "syntax"),
    "triton_compile_error": ("task_add_relu.py", HEADER + """
@triton.jit
def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.no_such_function(tl.load(x_ptr + offs, mask=offs < n)), mask=offs < n)


class ModelNew(nn.Module):
    def forward(self, x, y):
        out = torch.empty_like(x)
        k[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), BLOCK=256)
        return out
""", "compile_error", "no_such_function"),
    "no_modelnew": ("task_add_relu.py", HEADER + ADD_RELU_KERNEL, "compile_error", "ModelNew"),
    "runtime_error": ("task_add_relu.py", HEADER + ADD_RELU_KERNEL + """
class ModelNew(nn.Module):
    def forward(self, x, y):
        out = torch.empty_like(x)
        add_relu_kernel[(1,)](x, y, out)  # missing arguments
        return out
""", "runtime_error", "forward failed"),
    "segfault": ("task_add_relu.py", HEADER + ADD_RELU_KERNEL + """
import os


class ModelNew(nn.Module):
    def forward(self, x, y):
        os.kill(os.getpid(), 11)
        return add_relu(x, y)
""", "crash", "SIGSEGV"),
    "exits": ("task_add_relu.py", HEADER + ADD_RELU_KERNEL + """
import os


class ModelNew(nn.Module):
    def forward(self, x, y):
        os._exit(3)
""", "crash", "exit code 3"),
}

HANG = ("task_add_relu.py", HEADER + ADD_RELU_KERNEL + """
class ModelNew(nn.Module):
    def forward(self, x, y):
        while True:
            pass
""")
