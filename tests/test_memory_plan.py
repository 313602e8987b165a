"""Memory planning and who is blamed when memory runs out: a task that cannot
fit gets a task_error naming the bytes needed and available, before anything
is drawn; a candidate that exhausts memory gets runtime_error; a worker killed
while only the harness ran is never the candidate's crash."""

from __future__ import annotations

import types
from pathlib import Path

import pytest
import torch

from backends import EvalOptions, Executor, MemoryPlan, SandboxLimits, Verdict
from backends import _memory
from backends._compare import CHUNK

from executor_candidates import HONEST

CASES = Path(__file__).parent / "executor_cases"
FAST = EvalOptions(trials=2, cpu_reps=1)
ADD_RELU = HONEST["add_relu"][1]


def _task(tmp_path: Path, body: str, name: str = "task.py") -> Path:
    path = tmp_path / name
    path.write_text("import torch\nimport torch.nn as nn\n\n" + body)
    return path


def _module(**names) -> types.ModuleType:
    module = types.ModuleType("task_under_test")
    module.__dict__.update(names)
    return module


class Scale(torch.nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(n))

    def forward(self, x):
        return x * self.w


@pytest.fixture
def meta_forward(monkeypatch):
    monkeypatch.setattr(_memory, "META_FORWARD_BYTES", 0)  # run the meta forward even for these small inputs


def test_plan_counts_inputs_clones_outputs_weights_and_comparison(meta_forward):
    task = _module(Model=Scale, get_inputs=lambda: [torch.randn(1000, 250)], get_init_inputs=lambda: [250])
    plan = _memory.plan(task, [250], torch.device("cpu"), flush_bytes=0, budget_bytes=None)
    inputs = outputs = 1000 * 250 * 4
    weights = 250 * 4
    compare = min(1000 * 250, CHUNK) * 8 * 6
    assert (plan.input_bytes, plan.output_bytes, plan.weight_bytes) == (inputs, outputs, weights)
    assert not plan.outputs_estimated
    assert plan.needed_bytes == 2 * weights + 2 * inputs + 2 * outputs + compare
    assert plan.fits


def test_plan_uses_the_meta_device_only():
    # 64 GiB of inputs would be drawn for real if the plan touched data.
    task = _module(Model=Scale, get_inputs=lambda: [torch.randn(1 << 34)], get_init_inputs=lambda: [1])
    plan = _memory.plan(task, [1], torch.device("cpu"), flush_bytes=0, budget_bytes=1 << 30)
    assert plan.input_bytes == 4 << 34 and not plan.fits
    assert plan.available_from == "the configured memory budget"


def test_plan_counts_input_groups_held_together(meta_forward):
    def groups():
        return [[torch.randn(100, 10)], [torch.randn(300, 10)]]

    task = _module(Model=Scale, get_inputs=lambda: [torch.randn(100, 10)], get_input_groups=groups, get_init_inputs=lambda: [10])
    plan = _memory.plan(task, [10], torch.device("cpu"), flush_bytes=0, budget_bytes=None)
    held = (100 + 300) * 10 * 4
    assert plan.input_bytes == 300 * 10 * 4
    compare = 300 * 10 * 8 * 6
    assert plan.needed_bytes == 2 * 10 * 4 + held + 300 * 10 * 4 + 2 * 300 * 10 * 4 + compare


def test_small_tasks_skip_the_meta_forward():
    task = _module(Model=Scale, get_inputs=lambda: [torch.randn(1000, 250)], get_init_inputs=lambda: [250])
    plan = _memory.plan(task, [250], torch.device("cpu"), flush_bytes=0, budget_bytes=None)
    assert plan.outputs_estimated and plan.output_bytes == plan.input_bytes


def test_plan_estimates_outputs_when_meta_cannot_run(meta_forward):
    class DataDependent(torch.nn.Module):
        def forward(self, x):
            return x[x > 0]

    task = _module(Model=DataDependent, get_inputs=lambda: [torch.randn(64, 64)], get_init_inputs=list)
    plan = _memory.plan(task, [], torch.device("cpu"), flush_bytes=0, budget_bytes=None)
    assert plan.outputs_estimated and plan.output_bytes == 64 * 64 * 4
    assert "(estimated)" in plan.describe()


def test_out_of_memory_errors_are_recognised():
    assert _memory.is_out_of_memory(MemoryError())
    assert _memory.is_out_of_memory(RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate 1 bytes"))
    assert _memory.is_out_of_memory(RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB"))
    assert not _memory.is_out_of_memory(RuntimeError("shape mismatch"))


# --- through the executor ---------------------------------------------------------------


@pytest.fixture(scope="module")
def executor(cpu_executor):
    # The session's warm worker (conftest): these tests need a worker, not a fresh one.
    return cpu_executor


def test_task_over_the_budget_gets_a_task_error_with_the_bytes(executor):
    options = EvalOptions(trials=2, cpu_reps=1, memory_budget_bytes=100_000)
    result = executor.evaluate(CASES / "task_add_relu.py", ADD_RELU, options=options)
    assert result.status == Verdict.TASK_ERROR, result.message
    assert not result.status.candidate_fault
    plan = result.memory
    assert isinstance(plan, MemoryPlan) and not plan.fits
    assert plan.input_bytes == 2 * 37 * 1000 * 4
    assert f"needed {plan.needed_bytes} bytes, available 100000 bytes" in result.message
    assert "the configured memory budget" in result.message
    assert not result.launches, "nothing of the candidate ran"
    # the same worker then evaluates normally, and reports its plan
    ok = executor.evaluate(CASES / "task_add_relu.py", ADD_RELU, options=FAST)
    assert ok.status == Verdict.OK and ok.worker_reused
    assert ok.memory is not None and ok.memory.fits


@pytest.mark.slow
def test_task_over_the_address_space_limit_is_refused_before_drawing(tmp_path):
    # 8 GiB of inputs: planned on meta and refused against the 4 GiB address-space limit, never drawn.
    task = _task(tmp_path, "class Model(nn.Module):\n    def forward(self, x, y):\n        return torch.relu(x + y) * 2.0\n\n\n"
                 "def get_inputs():\n    return [torch.randn(1 << 30), torch.randn(1 << 30)]\n\n\ndef get_init_inputs():\n    return []\n")
    with Executor(device="cpu", timeout_s=120, sandbox=SandboxLimits(address_space_mb=4096)) as ex:
        result = ex.evaluate(task, ADD_RELU, options=FAST)
    assert result.status == Verdict.TASK_ERROR, result.message
    assert "does not fit" in result.message and "address-space limit of 4096 MiB" in result.message
    assert result.seconds < 30


def test_candidate_exhausting_memory_is_its_runtime_error(executor):
    greedy = ADD_RELU.replace("        return add_relu(x, y)",
                              "        hoard = torch.empty(1 << 46, dtype=torch.uint8)\n        return add_relu(x, y)")
    result = executor.evaluate(CASES / "task_add_relu.py", greedy, options=FAST)
    assert result.status == Verdict.RUNTIME_ERROR, result.message
    assert "out of memory" in result.message
    after = executor.evaluate(CASES / "task_add_relu.py", ADD_RELU, options=FAST)
    assert after.status == Verdict.OK


def test_reference_that_raises_is_a_task_error(executor, tmp_path):
    task = _task(tmp_path, "class Model(nn.Module):\n    def forward(self, x, y):\n        return torch.relu(x + y) * 2.0 + torch.ones(3)\n\n\n"
                 "def get_inputs():\n    return [torch.randn(37, 1000), torch.randn(37, 1000)]\n\n\ndef get_init_inputs():\n    return []\n")
    result = executor.evaluate(task, ADD_RELU, options=FAST)
    assert result.status == Verdict.TASK_ERROR, result.message
    assert "running the reference on trial 1" in result.message


KILLER_TASK = """import os
import signal

CALLS = []
if {when} == 0:
    os.kill(os.getpid(), signal.SIGKILL)  # what the out-of-memory killer does


class Model(nn.Module):
    def forward(self, x, y):
        CALLS.append(1)
        if len(CALLS) == {when}:  # call 1 is the memory plan's meta run, call 2 the first trial
            os.kill(os.getpid(), signal.SIGKILL)
        return torch.relu(x + y) * 2.0


def get_inputs():
    return [torch.randn(37, 1000), torch.randn(37, 1000)]


def get_init_inputs():
    return []
"""


@pytest.mark.slow
@pytest.mark.parametrize("when", [0, 2])
def test_worker_killed_in_the_harness_is_not_the_candidates_crash(tmp_path, when):
    task = _task(tmp_path, KILLER_TASK.replace("{when}", str(when)))
    with Executor(device="cpu", timeout_s=60, sandbox=SandboxLimits(enabled=False)) as ex:
        result = ex.evaluate(task, ADD_RELU, options=FAST)
    assert result.status == Verdict.TASK_ERROR, result.message
    assert "SIGKILL" in result.message and "out-of-memory killer" in result.message
    if when == 0:  # killed while the worker imported the task
        assert "before the candidate's code ran" in result.message
    else:  # killed in the reference of trial 1, after the candidate was imported and built
        assert "while the harness ran" in result.message
        assert result.memory is not None and result.memory.fits, "the plan the worker sent is named"
        assert "needs at least" in result.message


@pytest.mark.slow
def test_candidate_killed_while_it_runs_is_its_crash(tmp_path):
    source = ADD_RELU.replace("import torch\n", "import os\nimport torch\n", 1).replace(
        "        return add_relu(x, y)", "        os.kill(os.getpid(), 9)  # SIGKILL\n        return add_relu(x, y)")
    with Executor(device="cpu", timeout_s=60, sandbox=SandboxLimits(enabled=False)) as ex:
        result = ex.evaluate(CASES / "task_add_relu.py", source, options=FAST)
    assert result.status == Verdict.CRASH, result.message
    assert "while the candidate ran" in result.message
