"""Verification in a real worker: the kernels before and after a skill re-timed in
alternation (backends/_retime.py), and a skill admitted from it through the loop.

On this machine the latencies are the Triton interpreter's wall clock
(`interpreted-cpu`), which follows the number of program instances: a kernel
with 64 programs is reliably slower than one with a single program, which is
what these tests rely on (not GPU speed)."""

from __future__ import annotations

import pytest

import evokernel
from backends import EvalOptions, Verdict
from evokernel import Proposal, RunOptions
from evokernel.skills import SkillOptions, SkillStatus, skills_in, verify
from memory_store import MemoryStore

TASK = '''"""relu(x + y) on 64 x 64 floats."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, y):
        return torch.relu(x + y)


def get_inputs():
    return [torch.randn(64, 64), torch.randn(64, 64)]


def get_init_inputs():
    return []
'''

KERNEL = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_relu_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(x + y, 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x, y):
        x, y = x.contiguous(), y.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        add_relu_kernel[(triton.cdiv(n, BLOCK_SIZE),)](x, y, out, n, BLOCK=BLOCK_SIZE)
        return out
'''

SLOW = "BLOCK_SIZE = 64  # 64 programs\n" + KERNEL
FAST = "BLOCK_SIZE = 4096  # one program\n" + KERNEL
OPTIONS = EvalOptions(size="small", trials=2)


@pytest.fixture
def task(tmp_path):
    path = tmp_path / "add_relu_64.py"
    path.write_text(TASK)
    return path


@pytest.mark.slow
def test_retime_alternates_both_kernels_in_one_worker(task, cpu_executor):
    report = cpu_executor.retime(task, SLOW, FAST, options=OPTIONS, rounds=3)
    assert report.ok and report.latency_source == "interpreted-cpu"
    assert report.reruns == 3 and "order flipped each round" in report.timing_method
    assert all(b > c for b, c in report.rounds), report.rounds
    assert report.speedup > 1.2 and report.baseline_ms > report.candidate_ms
    # The same re-timing, the kernels swapped: the "skill" makes things slower and is not admitted.
    swapped = verify(cpu_executor, str(task), FAST, SLOW, backend="triton", eval_options=OPTIONS,
                     options=SkillOptions())
    assert not swapped.admitted and swapped.speedup < 1.0 and "did not reproduce" in swapped.reason
    assert swapped.latency_source == "interpreted-cpu" and swapped.reruns == 3


def test_retime_reports_a_kernel_that_no_longer_runs_or_matches(task, cpu_executor):
    broken = cpu_executor.retime(task, SLOW, "def broken(:\n", options=OPTIONS, rounds=3)
    assert broken.status is Verdict.COMPILE_ERROR and not broken.ok and "candidate kernel is refused" in broken.message
    wrong = cpu_executor.retime(task, FAST.replace("tl.maximum(x + y, 0.0)", "x + y"), FAST, options=OPTIONS, rounds=3)
    assert wrong.status is Verdict.WRONG_RESULT and "baseline kernel no longer matches" in wrong.message
    assert wrong.speedup is None and wrong.rounds == ()


class TwoKernels:
    """Drafts the slow kernel, then refines to the fast one; names its block size as a configuration
    the way the builtin policies do, so the builtin summariser can say what changed."""

    name, is_llm = "two-kernels", False

    def propose(self, ctx):
        source, block = (SLOW, 64) if ctx.step == 1 else (FAST, 4096)
        return Proposal(source, key_text=f"{ctx.task_name} elementwise triton\nfamily: elementwise; ops: add, relu",
                        fingerprint=f"block{block}", extra={"config": {"family": "elementwise", "block_n": block}})


@pytest.mark.slow
def test_a_skill_is_admitted_from_a_real_re_timing(tmp_path, task, cpu_executor):
    with MemoryStore(tmp_path / "m.db") as store:
        result = evokernel.run([task], RunOptions.of(budget=2, trials=2, device="cpu", jobs=1), policy=TwoKernels(),
                               store=store, executor=cpu_executor)
        assert result.tasks[0].statuses == ["ok", "ok"]
        [skill] = skills_in(store)
        assert skill.status is SkillStatus.ADMITTED, skill.verification
        v = store.get_item(skill.id).extra["verification"]
        assert v["latency_source"] == "interpreted-cpu" and v["reruns"] == 3 and v["speedup"] >= 1.2
        assert "interpreted CPU wall clock, not GPU speed" in v["reason"]
        assert skill.hint["set"] == {"block_n": 4096} and skill.scope.operators == ("add", "relu")
