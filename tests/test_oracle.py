"""The accuracy oracle end to end on the CPU: kernels judged against the reference run in float64.

A kernel at least as accurate as the reference passes where the reference's own rounding puts
elements past the tolerance (a cancelling row sum, summed in fp64 or in another fp32 order); one far
less accurate than the reference fails even where the tolerance alone would pass it (TF32 operands
in a matmul, an fp16 softmax) or where it fails anyway (an fp16 accumulator). Both errors are in
every verdict. The kernels run in Triton's interpreter under the strict rules."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from backends import EvalOptions, Verdict
from backends._oracle import Oracle

from executor_candidates import HEADER, HONEST, MATMUL_KERNEL

CASES = Path(__file__).parent / "executor_cases"

# Terms of size ~100 whose row sums are ~1: fp32 rounding of the partial sums (~6000) leaves the
# reference's own sums ~1e-3 off, past the 1e-4 tolerance (measured: every seed, most rows).
CANCELLING_SUM_TASK = '''
import torch
import torch.nn as nn

ROWS, COLS = 32, 4096


class Model(nn.Module):
    def forward(self, x):
        return x.sum(dim=1)


def get_inputs():
    x = torch.randn(ROWS, COLS, dtype=torch.float64) * 100
    x[:, -1] = -x[:, :-1].sum(1) + torch.randn(ROWS, dtype=torch.float64)
    return [x.float()]


def get_init_inputs():
    return []
'''

LARGE_K_MATMUL_TASK = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, A, B):
        return A @ B


def get_inputs():
    return [torch.rand(16, 1024), torch.rand(1024, 16)]


def get_init_inputs():
    return []
'''


def row_sum(acc: str) -> str:
    """A one-program-per-row sum: 1024 lanes accumulate in `acc` (tl.float64, tl.float32, tl.float16), then a tree."""
    return HEADER + f'''
@triton.jit
def row_sum_kernel(x_ptr, out_ptr, n_cols, stride_row, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype={acc})
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride_row + cols, mask=cols < n_cols, other=0.0)
        acc += x.to({acc})
    tl.store(out_ptr + row, tl.sum(acc, axis=0).to(tl.float32))


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty(x.shape[0], device=x.device, dtype=x.dtype)
        row_sum_kernel[(x.shape[0],)](x, out, x.shape[1], x.stride(0), BLOCK=1024)
        return out
'''


# The tensor cores' TF32: each fp32 operand keeps 10 mantissa bits (rounded), products and sums in fp32.
# (Triton's interpreter computes a plain tl.dot in IEEE fp32, so the rounding is spelled out here.)
TF32_MATMUL = HEADER + '''
@triton.jit
def to_tf32(v):
    return ((v.to(tl.int32, bitcast=True) + 0x1000) & -8192).to(tl.float32, bitcast=True)
''' + MATMUL_KERNEL.replace("acc += tl.dot(a, b, input_precision=\"ieee\")",
                            "acc += tl.dot(to_tf32(a), to_tf32(b), input_precision=\"ieee\")") + '''

class ModelNew(nn.Module):
    def forward(self, A, B):
        return matmul(A, B)
'''

FP16_SOFTMAX = HEADER + '''
@triton.jit
def softmax_fp16_kernel(x_ptr, out_ptr, n_cols, stride_row, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_row + cols, mask=mask, other=-float("inf")).to(tl.float16)
    x = x - tl.max(x, axis=0)
    num = tl.exp(x.to(tl.float32)).to(tl.float16)
    out = num / tl.sum(num, axis=0)
    tl.store(out_ptr + row * n_cols + cols, out.to(tl.float32), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        rows = x.reshape(-1, x.shape[-1])
        out = torch.empty_like(rows)
        n_rows, n_cols = rows.shape
        softmax_fp16_kernel[(n_rows,)](rows, out, n_cols, rows.stride(0), BLOCK=triton.next_power_of_2(n_cols))
        return out.view(x.shape)
'''


def fast(**kw) -> EvalOptions:
    return EvalOptions(trials=2, cpu_reps=1, timing=False, **kw)


@pytest.fixture(scope="module")
def large_k_task(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("oracle") / "task_large_k_matmul.py"
    path.write_text(LARGE_K_MATMUL_TASK)
    return path


@pytest.fixture(scope="module")
def cancelling_task(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("oracle") / "task_cancelling_sum.py"
    path.write_text(CANCELLING_SUM_TASK)
    return path


@pytest.mark.parametrize("acc", ["tl.float64", "tl.float32"])
def test_kernels_as_accurate_as_the_reference_pass_where_its_rounding_fails_the_tolerance(cpu_executor, cancelling_task, acc):
    result = cpu_executor.evaluate(cancelling_task, row_sum(acc), backend="triton", options=fast())
    assert result.status == Verdict.OK, result.feedback
    assert result.by_accuracy, "the tolerance against the reference alone fails this kernel"
    assert result.reference_error > 1e-4 and result.oracle_unavailable == ""
    if acc == "tl.float64":
        assert result.candidate_error < 1e-6, "exact accumulation: only the output's own rounding is left"
    else:
        assert result.candidate_error < 3 * result.reference_error
    assert "float64" in result.feedback and f"{result.candidate_error:.3g}" in result.feedback


def test_an_fp16_accumulator_is_rejected(cpu_executor, cancelling_task):
    result = cpu_executor.evaluate(cancelling_task, row_sum("tl.float16"), backend="triton", options=fast())
    assert result.status == Verdict.WRONG_RESULT, result.feedback
    assert result.candidate_error > 100 * result.reference_error
    assert "reference run in float64" in result.feedback


def test_a_tf32_matmul_on_an_fp32_task_is_rejected(cpu_executor, large_k_task):
    # A long K of positive terms averages TF32's rounding below the tolerance (1e-4 of |out| ~ 256): only
    # its accuracy against the reference's own tells it from an fp32 kernel.
    result = cpu_executor.evaluate(large_k_task, TF32_MATMUL, backend="triton", options=fast())
    assert result.status == Verdict.WRONG_RESULT, result.feedback
    assert "less accurate than the reference, although within atol" in result.message
    assert result.candidate_error > 8 * max(result.reference_error, 2.0 ** -24)
    ieee = HEADER + MATMUL_KERNEL + TF32_MATMUL[TF32_MATMUL.index("\nclass ModelNew"):]
    honest = cpu_executor.evaluate(large_k_task, ieee, backend="triton", options=fast())
    assert honest.status == Verdict.OK and honest.candidate_error < 8 * honest.reference_error, honest.feedback


def test_an_fp16_compute_kernel_is_rejected_inside_the_tolerance(cpu_executor, tmp_path):
    # Rows of 4096: every probability is far below 1, so fp16's relative error stays inside atol=1e-4.
    task = tmp_path / "task_wide_softmax.py"
    task.write_text((CASES / "task_row_softmax.py").read_text().replace("torch.randn(3, 17, 333)", "torch.randn(2, 8, 4096)"))
    result = cpu_executor.evaluate(task, FP16_SOFTMAX, backend="triton", options=fast())
    assert result.status == Verdict.WRONG_RESULT, result.feedback
    assert "less accurate than the reference, although within atol" in result.message


def test_honest_kernels_pass_with_both_errors_reported(cpu_executor):
    task, source = HONEST["kb_style_matmul"]
    result = cpu_executor.evaluate(CASES / task, source, backend="triton",
                                   options=EvalOptions(trials=2, cpu_reps=1))  # the re-check after timing too
    assert result.status == Verdict.OK, result.feedback
    assert not result.by_accuracy and result.candidate_error is not None and result.reference_error is not None
    assert "Against the reference run in float64" in result.feedback


# ---------------------------------------------------------------- the oracle itself, no worker


class _FixedDtype(torch.nn.Module):
    def forward(self, x):
        return x @ torch.ones(x.shape[-1], 3)  # a float32 operand made inside forward: no float64 run


class _Scaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 3)
        self.scale = torch.tensor(0.5)  # a plain tensor attribute, neither parameter nor buffer

    def forward(self, x, steps):
        return self.linear(x) * self.scale, steps + 1


def test_the_oracle_runs_the_model_in_float64_or_says_why_not():
    x = torch.randn(5, 4)
    model = _Scaled()
    expected = model(x, torch.arange(3))
    oracle = Oracle(model, torch.device("cpu"))
    exact = oracle.exact([x, torch.arange(3)], expected)
    assert exact[0].dtype == torch.float64 and exact[1].dtype == torch.int64 and oracle.unavailable == ""
    assert torch.allclose(exact[0].float(), expected[0], atol=1e-6)
    assert model.linear.weight.dtype == torch.float32, "the reference model itself is left as it is"

    clash = Oracle(_FixedDtype(), torch.device("cpu"))
    assert clash.exact([x], _FixedDtype()(x)) is None
    assert clash.unavailable.startswith("the reference does not run in float64: RuntimeError")
    assert "judged by the tolerance alone" in clash.describe()

    wide = Oracle(_FixedDtype(), torch.device("cpu"))
    assert wide.exact([x.double()], x.double()) is None and "float64 already" in wide.unavailable
    ints = Oracle(_FixedDtype(), torch.device("cpu"))
    assert ints.exact([x], torch.arange(3)) is None and "not floating point" in ints.unavailable


def test_the_oracle_leaves_the_candidate_its_device_memory(monkeypatch):
    # On a GPU the float64 run must fit beside what the candidate needs, or the candidate would be blamed.
    model, x = _Scaled(), torch.randn(1000, 4)
    expected = model(x, torch.arange(3))
    oracle = Oracle(model, torch.device("cuda"))
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (40_000, 1 << 30))
    assert oracle.exact([x, torch.arange(3)], expected) is None
    assert oracle.unavailable.startswith("too little free device memory for the float64 reference")
    roomy = Oracle(model, torch.device("cuda"))
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (1 << 30, 1 << 30))
    assert roomy.crowds_out([x, torch.arange(3)], expected) == ""


def test_the_allocators_idle_blocks_count_as_room_for_the_oracle(monkeypatch):
    # After a conditioning draw the caching allocator keeps the freed float64 blocks; mem_get_info counts
    # them as used, so a later trial's oracle was dropped for want of memory the process already held.
    model, x = _Scaled(), torch.randn(1000, 4)
    expected = model(x, torch.arange(3))
    oracle = Oracle(model, torch.device("cuda"))
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (40_000, 1 << 30))
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda device=None: 1 << 29)
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda device=None: 1 << 20)
    assert oracle.crowds_out([x, torch.arange(3)], expected) == ""
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda device=None: (1 << 29) - 1000)
    assert oracle.crowds_out([x, torch.arange(3)], expected).startswith("too little free device memory")


def test_the_conditioning_is_measured_only_where_its_draws_fit(monkeypatch):
    # A draw holds the float64 model, inputs and outputs twice over; where that does not fit, no conditioning
    # is measured (so none is allowed) rather than running the candidate's device out of memory.
    from backends import _oracle

    model, x = _Scaled(), torch.randn(1000, 4)
    steps = torch.arange(3)
    expected = model(x, steps)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: None)  # tensors stay on the CPU
    wide = (x.numel() + expected[0].numel()) * 8  # float64 inputs and outputs, in bytes
    need = 2 * (sum(t.numel() * 8 for t in (*model.parameters(), *model.buffers())) + wide + steps.numel() * 8
                + expected[1].numel() * 8)
    for free, measured in ((need - 1, False), (need, True)):
        monkeypatch.setattr(_oracle, "device_free_bytes", lambda device, free=free: free)
        oracle = Oracle(model, torch.device("cuda"))
        exact = oracle.exact([x, steps], expected)
        assert exact is not None, oracle.unavailable  # the float64 run itself fits (crowds_out)
        got = oracle.conditioning([x, steps], expected, exact)()
        assert (got is not None) == measured, free
        if measured:
            assert got[0].shape == expected[0].shape and bool((got[0] > 0).any())


def test_the_side_by_side_retiming_judges_as_the_evaluation_does(cpu_executor, cancelling_task):
    """Both drafts pass the evaluation by accuracy (the reference's own sums are past the tolerance);
    the re-timing accepts them too, and still refuses the fp16 accumulator."""
    options = EvalOptions(trials=1, cpu_reps=1, reps=1, warmup=1)
    report = cpu_executor.retime(cancelling_task, row_sum("tl.float32"), row_sum("tl.float64"), options=options, rounds=2)
    assert report.ok, report.message
    assert len(report.rounds) == 2
    report = cpu_executor.retime(cancelling_task, row_sum("tl.float64"), row_sum("tl.float16"), options=options, rounds=2)
    assert report.status == Verdict.WRONG_RESULT and "candidate kernel no longer matches" in report.message
