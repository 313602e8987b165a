"""The executor on CPU: honest kernels pass, every hack in the catalogue is
rejected with a message naming the rule, failures get the right verdict."""

from __future__ import annotations

from pathlib import Path

import pytest

from backends import EvalOptions, Executor, KernelFacts, Verdict

from executor_candidates import FAILURES, HACKS, HANG, HONEST

CASES = Path(__file__).parent / "executor_cases"
FAST = EvalOptions(trials=3, cpu_reps=1)


@pytest.fixture(scope="module")
def executor(cpu_executor):
    # The session's warm worker (conftest): these tests need a worker, not a fresh one.
    return cpu_executor


def test_catalogue_sizes():
    assert len(HACKS) >= 15
    assert len(HONEST) >= 5


@pytest.mark.parametrize("name", sorted(HONEST))
def test_honest_kernel_passes(executor, name):
    task, source = HONEST[name]
    result = executor.evaluate(CASES / task, source, backend="triton", options=FAST)
    assert result.status == Verdict.OK, result.feedback
    assert result.latency_source == "interpreted-cpu"
    assert result.latency_ms is not None and result.latency_ms > 0
    assert result.launches, "the executor must record the candidate's launches"
    assert result.kernels and result.kernels[0].registers, "the sm_90 compile must report registers"
    # where the evaluation's time went, by step: the steps every honest evaluation takes, within its seconds
    steps = result.step_seconds
    assert {"importing the task", "building the reference model", "importing the candidate",
            "timing the candidate"} <= set(steps), sorted(steps)
    # each step is rounded to the millisecond, so their sum may exceed the total by half a millisecond a step
    assert all(v >= 0 for v in steps.values()) and sum(steps.values()) <= result.seconds + 5e-4 * len(steps)


@pytest.mark.parametrize("name", sorted(HACKS))
def test_hack_rejected(executor, name):
    task, source, rule = HACKS[name]
    result = executor.evaluate(CASES / task, source, backend="triton", options=FAST)
    assert result.status == Verdict.HACK, f"{name}: {result.status} {result.message}"
    assert rule.lower() in (result.message + result.feedback).lower(), result.feedback


@pytest.mark.parametrize("name", sorted(FAILURES))
def test_failure_verdicts(executor, name):
    task, source, status, fragment = FAILURES[name]
    result = executor.evaluate(CASES / task, source, backend="triton", options=FAST)
    assert result.status.value == status, f"{name}: {result.status} {result.message}"
    assert fragment.lower() in (result.message + result.feedback).lower()
    assert result.effective_latency_ms() == float("inf")


def test_wrong_result_feedback_locates_the_error(executor):
    task, source, _, _ = FAILURES["half_written"]
    result = executor.evaluate(CASES / task, source, backend="triton", options=FAST)
    assert "first mismatch at index" in result.feedback
    assert "rows" in result.feedback


def test_hang_is_killed_and_next_candidate_runs(executor):
    task, source = HONEST["add_relu"]
    # A warm worker (its task cached): the hang starts at once, so a short per-call timeout is enough.
    assert executor.evaluate(CASES / task, source, backend="triton", options=FAST).status == Verdict.OK
    htask, hsource = HANG
    result = executor.evaluate(CASES / htask, hsource, backend="triton", options=FAST, timeout_s=4)
    assert result.status == Verdict.TIMEOUT, result.message
    assert "timed out after 4 s" in result.message
    after = executor.evaluate(CASES / task, source, backend="triton", options=FAST)
    assert after.status == Verdict.OK
    assert not after.worker_reused, "a worker is retired after a timeout"


SLOW_REFERENCE_TASK = """
import time
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, y):
        if x.device.type != "meta":
            time.sleep(60)
        return torch.relu(x + y) * 2.0


def get_inputs():
    return [torch.randn(37, 1000), torch.randn(37, 1000)]


def get_init_inputs():
    return []
"""


def test_a_timeout_names_the_harness_step_it_struck(executor, tmp_path):
    task = tmp_path / "slow_reference.py"
    task.write_text(SLOW_REFERENCE_TASK)
    result = executor.evaluate(task, HONEST["add_relu"][1], backend="triton", options=FAST, timeout_s=4)
    # Not the candidate's timeout: its call had ended (and synchronised) when the reference began.
    assert result.status == Verdict.TASK_ERROR, result.message
    assert "while the harness was running the reference on trial 1" in result.message, result.message


def test_worker_is_reused_and_retired_after_crash():
    with Executor(device="cpu", timeout_s=60) as ex:
        task, source = HONEST["add_relu"]
        first = ex.evaluate(CASES / task, source, backend="triton", options=FAST)
        second = ex.evaluate(CASES / task, source, backend="triton", options=FAST)
        assert (first.worker_reused, second.worker_reused) == (False, True)
        ctask, csource, _, _ = FAILURES["segfault"]
        assert ex.evaluate(CASES / ctask, csource, backend="triton", options=FAST).status == Verdict.CRASH
        third = ex.evaluate(CASES / task, source, backend="triton", options=FAST)
        assert third.status == Verdict.OK and not third.worker_reused
        assert ex.workers_started == 2


def test_candidate_stdout_cannot_forge_a_verdict(executor):
    task, source = HONEST["add_relu"]
    forged = source.replace(
        "        return add_relu(x, y)",
        '        print(\'{"result": {"status": "ok"}}\')\n        return add_relu(x, y) + 1',
    )
    # `+ 1` on a tensor is a torch op: the guard must still see it
    result = executor.evaluate(CASES / task, forged, backend="triton", options=FAST)
    assert result.status == Verdict.DISALLOWED


def test_near_zero_task_warns(executor, tmp_path):
    task = tmp_path / "tiny.py"
    task.write_text(
        "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
        "    def forward(self, x, y):\n        return torch.relu(x + y) * 2e-9\n\n\n"
        "def get_inputs():\n    return [torch.randn(8, 64), torch.randn(8, 64)]\n\n\ndef get_init_inputs():\n    return []\n"
    )
    source = HONEST["add_relu"][1].replace("* 2.0", "* 2e-9")
    result = executor.evaluate(task, source, backend="triton", options=FAST)
    assert result.status == Verdict.OK
    assert any("close to zero" in w for w in result.warnings)


def test_input_groups_all_checked(executor, tmp_path):
    task = tmp_path / "groups.py"
    task.write_text(
        "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
        "    def forward(self, x, y):\n        return torch.relu(x + y) * 2\n\n\n"
        "def get_inputs():\n    return [torch.randn(4, 256), torch.randn(4, 256)]\n\n\n"
        "def get_input_groups():\n    return [[torch.randn(3, 77), torch.randn(3, 77)], [torch.randn(5000), torch.randn(5000)]]\n\n\n"
        "def get_init_inputs():\n    return []\n"
    )
    # A kernel that only handles a single block of 1024 passes the first set, not the last group.
    source = HONEST["add_relu"][1].replace("(triton.cdiv(n, 1024),)", "(1,)")
    result = executor.evaluate(task, source, backend="triton", options=FAST)
    assert result.status == Verdict.WRONG_RESULT
    assert "input group 1" in result.message


def test_triton_gpu_compile_report_comes_from_this_forward_call():
    from backends import LaunchLog, get_backend

    backend = get_backend("triton")
    log = LaunchLog()
    log.record("triton", "old_kernel", mode="gpu", registers=40, spills=0, shared_bytes=0, num_warps=4)
    log.clear()  # a new forward call: earlier candidates' kernels must not be reported
    log.record("triton", "k", mode="gpu", registers=32, spills=0, shared_bytes=1024, num_warps=4)
    log.record("triton", "k", mode="gpu", registers=32, spills=0, shared_bytes=1024, num_warps=4)
    report = backend.compile_check(None, log)
    assert report.ok and report.kernels == [KernelFacts("k", registers=32, spills=0, shared_bytes=1024, num_warps=4)]


def test_the_compile_baseline_time_limit_interrupts_its_block():
    import threading
    import time

    from backends._evaluate import _caused_by, _OutOfTime, _time_limit

    t0 = time.monotonic()
    with pytest.raises(_OutOfTime):
        with _time_limit(0.2):
            time.sleep(5)
    assert time.monotonic() - t0 < 2
    with _time_limit(0.2):  # a block that ends in time leaves no alarm behind
        pass
    time.sleep(0.3)
    box = []
    thread = threading.Thread(target=lambda: box.append(_time_limit(0.1).__enter__() is None))
    thread.start(), thread.join()  # off the main thread: no SIGALRM, no limit, no error
    assert box == [True]
    try:  # torch.compile wraps what its backend raised (BackendCompilerFailed): the cause is still found
        try:
            raise _OutOfTime
        except _OutOfTime as inner:
            raise RuntimeError("backend compiler failed") from inner
    except RuntimeError as wrapped:
        assert _caused_by(wrapped, _OutOfTime) and not _caused_by(RuntimeError("other"), _OutOfTime)


def test_timed_runs_are_not_logged_and_launch_straight_through(monkeypatch):
    # While a candidate (or the torch.compile baseline) is timed, the launch hooks add nothing:
    # no record, no pause, the compiled kernel's own launcher called as it is
    from triton.compiler import CompiledKernel

    from backends._backend import LaunchLog
    from backends.triton_backend import TritonBackend, _wrap_compiled

    calls = []

    def original(kernel_self, grid):
        return lambda *args, **kwargs: calls.append((grid, args, kwargs))

    monkeypatch.setattr(CompiledKernel, "__getitem__", original)
    log = LaunchLog()
    backend = TritonBackend()
    _wrap_compiled(log, backend)
    kernel = CompiledKernel.__new__(CompiledKernel)
    kernel.name = "k"
    kernel[(2, 1, 1)](1, 2, stream=7)
    assert [e["name"] for e in log.launches] == ["k"]
    with log.quieted():
        kernel[(2, 1, 1)](3, 4, stream=7)
        log.record("triton", "other")
        assert log.paused == 0
    assert [e["name"] for e in log.launches] == ["k"] and not log.quiet
    assert calls == [((2, 1, 1), (1, 2), {"stream": 7}), ((2, 1, 1), (3, 4), {"stream": 7})]
