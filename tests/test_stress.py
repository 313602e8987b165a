"""Degenerate references are tested, not warned about (issue 20).

The real case: KernelBench level2/9 (matmul, subtract 2, multiply 1.5, ReLU)
gives all zeros on its torch.rand inputs, so a kernel computing x @ W instead
of x @ W.T passes. Reproduced here with a task and kernels of our own
(tests/executor_cases/task_matmul_sub_relu.py): the wrong kernel passes the
task's own inputs and is rejected by a stress trial; the honest one passes
both. A dropout task is reported as non-deterministic, and a task that no
input distribution can make testable is marked degenerate.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from backends import EvalOptions, Verdict, assess_task, load_task_module, output_reasons
from backends._stress import Observations, nondeterminism, plan_stress

from executor_candidates import ADD_RELU_KERNEL, HEADER

CASES = Path(__file__).parent / "executor_cases"
LEVEL2_9 = CASES / "task_matmul_sub_relu.py"
FAST = EvalOptions(trials=2, cpu_reps=1)

LINEAR_EPILOGUE = HEADER + '''
@triton.jit
def linear_sub_mul_relu_kernel(x_ptr, w_ptr, b_ptr, out_ptr, M, N, K, stride_xm, stride_xk, stride_wa, stride_wb,
                               sub, mul, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(x_ptr + rm[:, None] * stride_xm + rk[None, :] * stride_xk,
                    mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        w = tl.load(w_ptr + rn[None, :] * stride_wa + rk[:, None] * stride_wb,
                    mask=(rn[None, :] < N) & (rk[:, None] < K), other=0.0)
        acc += tl.dot(a, w, input_precision="ieee")
    bias = tl.load(b_ptr + rn, mask=rn < N, other=0.0)
    acc = tl.maximum((acc + bias[None, :] - sub) * mul, 0.0)
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, subtract_value, multiply_value):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.sub, self.mul = subtract_value, multiply_value

    def forward(self, x):
        w, b = self.linear.weight, self.linear.bias
        M, K = x.shape
        N = w.shape[0]
        out = torch.empty((M, N), dtype=x.dtype, device=x.device)
        grid = (triton.cdiv(M, 16), triton.cdiv(N, 16))
        linear_sub_mul_relu_kernel[grid](x, w, b, out, M, N, K, x.stride(0), x.stride(1), STRIDES,
                                         self.sub, self.mul, BLOCK_M=16, BLOCK_N=16, BLOCK_K=16)
        return out
'''
# weight is (N, K): element [n, k] at n * stride(0) + k * stride(1). The honest kernel reads W[n, k]
# (x @ W.T); the wrong one swaps the strides and reads W[k, n] (x @ W), as the Qwen3 kernel did.
HONEST_9 = LINEAR_EPILOGUE.replace("STRIDES", "w.stride(0), w.stride(1)")
WRONG_9 = LINEAR_EPILOGUE.replace("STRIDES", "w.stride(1), w.stride(0)")


@pytest.fixture(scope="module")
def executor(cpu_executor):
    # The session's warm worker (conftest): these tests need a worker, not a fresh one.
    return cpu_executor


# ---------------------------------------------------------------- the checks themselves


def _with(t: torch.Tensor, value: float) -> torch.Tensor:
    t = t.clone()
    t.view(-1)[0] = value
    return t


@pytest.mark.parametrize("out, fragment", [
    (torch.zeros(8, 16), "close to zero"),
    (torch.full((8, 16), 3.0), "constant"),
    (_with(torch.zeros(8, 16), 1.0), "mostly zero"),
    (torch.arange(8.0).repeat_interleave(16).reshape(8, 16) + 1, "one value per row"),
    (_with(torch.full((100, 100), 5.0), 9.0), "low variance"),
])
def test_degenerate_outputs_are_named(out, fragment):
    reasons = output_reasons(out)
    assert reasons and fragment in reasons[0], reasons


def test_sound_outputs_have_no_reasons():
    torch.manual_seed(0)
    assert output_reasons(torch.randn(32, 64)) == []
    assert output_reasons((torch.randn(4, 4), torch.arange(10))) == []
    assert output_reasons(torch.relu(torch.randn(32, 64))) == []  # half zeros is not degenerate


def test_nondeterminism_is_seen_by_running_twice():
    torch.manual_seed(0)
    a = torch.randn(16, 16)
    assert nondeterminism(a, a.clone(), None) is None
    assert "not deterministic" in nondeterminism(a, torch.nn.functional.dropout(a, 0.5), None)


def test_level2_9_is_degenerate_on_its_own_inputs_and_stress_finds_inputs_that_are_not():
    plan = assess_task(load_task_module(LEVEL2_9))
    assert any("close to zero" in r for r in plan.reasons)
    assert plan.sets and plan.distribution and not plan.degenerate
    draw = plan.sets[0][1]
    x = draw()[0]
    assert x.shape == (16, 64) and x.dtype == torch.float32 and float(x.min()) < 0  # not torch.rand's [0, 1)


def test_a_task_no_distribution_can_fix_is_marked_degenerate():
    plan = assess_task(load_task_module(CASES / "task_ignores_inputs.py"))
    assert not plan.sets and "no stress distribution" in plan.degenerate


def test_insensitivity_to_one_input_is_found():
    # out = x * 1 + 0 * y: the output never moves with y, whatever y's distribution.
    def forward(xs):
        return xs[0] * 2.0 + xs[1] * 0.0

    draws = [lambda s=s: [torch.randn(8, 8, generator=torch.Generator().manual_seed(s)),
                          torch.randn(8, 8, generator=torch.Generator().manual_seed(s + 50))] for s in (1, 2)]
    seen = Observations(None)
    for d in draws:
        seen.add(forward(d()))
    plan = plan_stress(forward, seen, draws, seed=0)
    assert any("insensitive to input 1" in r for r in plan.reasons)
    assert plan.degenerate and not plan.sets


def test_a_distribution_under_which_the_reference_is_far_from_its_float64_run_is_not_used():
    # Zero on the task's own rand inputs; from normal(0, 10) on it moves with its input, but the
    # fp32 reference adds and takes away 1e8 (float32 spacing 8 there), so its outputs are whole
    # numbers far from what the float64 run computes (the 40_GRUHidden case: a saturated TF32 GRU on
    # normal(0, 100) inputs 18-22% RMS from its own float64 run). No kernel could be told right there.
    def forward(xs):
        return ((xs[0] - 2.0).clamp(min=0.0) * 0.37 + 1e8) - 1e8

    def exact(xs, out):
        return forward([x.double() for x in xs])

    draws = [lambda s=s: [torch.rand(32, 32, generator=torch.Generator().manual_seed(s))] for s in (1, 2)]
    seen = Observations(None)
    for d in draws:
        seen.add(forward(d()))
    trusting = plan_stress(forward, seen, draws, seed=0)
    assert trusting.sets and trusting.distribution  # without the float64 run it looked testable
    plan = plan_stress(forward, seen, draws, seed=0, exact=exact)
    assert not plan.sets and plan.degenerate
    assert "untrustworthy" in plan.degenerate and f"{trusting.distribution}: the reference's output is" in plan.degenerate

    def honest(xs):  # the same operator without the cancellation: the first distribution that helps is used
        return (xs[0] - 2.0).clamp(min=0.0) * 0.37

    seen = Observations(None)
    for d in draws:
        seen.add(honest(d()))
    plan = plan_stress(honest, seen, draws, seed=0, exact=lambda xs, out: honest([x.double() for x in xs]))
    assert plan.distribution == "normal(0, 10)" and plan.sets


# ---------------------------------------------------------------- end to end in the executor


def test_wrong_kernel_that_writes_the_right_zeros_is_rejected_by_a_stress_trial(executor):
    # Without stress trials it passes: the task's own inputs cannot tell x @ W from x @ W.T.
    plain = executor.evaluate(LEVEL2_9, WRONG_9, backend="triton", options=EvalOptions(trials=2, cpu_reps=1, stress_trials=0))
    assert plain.status == Verdict.OK
    result = executor.evaluate(LEVEL2_9, WRONG_9, backend="triton", options=FAST)
    assert result.status == Verdict.WRONG_RESULT, result.message
    assert "stress trial 1" in result.message and "normal(0, 10)" in result.message
    assert "close to zero" in result.message  # why the stress trial was needed


def test_honest_kernel_passes_the_stress_trials(executor):
    result = executor.evaluate(LEVEL2_9, HONEST_9, backend="triton", options=FAST)
    assert result.status == Verdict.OK, result.feedback
    assert len(result.stress_trials) == 2 and all("normal(0, 10)" in s for s in result.stress_trials)
    assert result.trials == FAST.trials + 2 and result.degenerate == ""


def test_dropout_reference_is_a_task_error_not_a_wrong_candidate(executor):
    source = HEADER + ADD_RELU_KERNEL + """
class ModelNew(nn.Module):
    def forward(self, x, y):
        return add_relu(x, y)
"""
    result = executor.evaluate(CASES / "task_dropout_train.py", source, backend="triton", options=FAST)
    assert result.status == Verdict.TASK_ERROR, result.message
    assert "not deterministic" in result.message and "dropout" in result.message
    assert not result.status.candidate_fault


def test_unfixable_degenerate_task_is_marked_in_the_result(executor):
    source = HEADER + """
@triton.jit
def two_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * 0.0 + 2.0, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x, y):
        out = torch.empty_like(x)
        two_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        return out
"""
    result = executor.evaluate(CASES / "task_ignores_inputs.py", source, backend="triton", options=FAST)
    assert result.status == Verdict.OK, result.feedback
    assert "constant" in result.degenerate and not result.stress_trials
    assert any(w.startswith("degenerate task") for w in result.warnings)


def test_suite_filter_uses_the_same_check():
    from evokernel.bench.degenerate import check_task, degenerate_tasks

    level2_9 = {f.check: f.detail for f in check_task(LEVEL2_9, seeds=2)}
    assert "near_zero" in level2_9 and "normal(0, 10)" in level2_9["stress_tested"]
    assert "degenerate" not in level2_9
    listed = degenerate_tasks([CASES / "task_ignores_inputs.py", LEVEL2_9, CASES / "task_add_relu.py"])
    assert list(listed) == [str(CASES / "task_ignores_inputs.py")] and "no stress distribution" in listed[str(CASES / "task_ignores_inputs.py")]
