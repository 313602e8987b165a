"""`evokernel.run` and `RunOptions`: one entry point, settings as values, one
accounting path for live steps and resume, nothing written by a run that
cannot start."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

import evokernel
from backends import EvalResult, Verdict
from evokernel import RunError, RunOptions
from memory_store import MemoryStore

from llm_server import llm_env  # noqa: F401  (fixture)
from loop_doubles import RecordingPolicy, ScriptedExecutor, ok

HERE = Path(__file__).parent
ADD_RELU = HERE / "executor_cases" / "task_add_relu.py"
CPU = dict(device="cpu", trials=2, jobs=1)


# --- options ------------------------------------------------------------------


@pytest.mark.parametrize("fields, words", [
    (dict(budget=0), "budget must be at least 1"),
    (dict(timeout_s=-5), "timeout must be a positive number"),
    (dict(trials=0), "trials must be at least 1"),
    (dict(reps=0), "reps must be at least 1"),
    (dict(jobs=0), "jobs must be at least 1"),
    (dict(size="sm all"), "size must be full or small"),
    (dict(size="FULL"), "size must be full or small"),
    (dict(timeout_s=float("inf")), "up to 604800"),
    (dict(timeout_s=1e12), "up to 604800"),
    (dict(rules="lax"), "rules must be one of strict, kernelbench"),
    (dict(memory_mode="greedy"), "memory mode must be one of"),
    (dict(engine="dask"), "engine must be one of local, ray"),
    (dict(port_from=("triton",)), "is the run's own backend"),
    (dict(model="gpt-5"), "PROVIDER:MODEL"),
    (dict(gpus=()), "non-empty list of device indices"),
])
def test_options_refuse_bad_values(fields, words):
    with pytest.raises(RunError, match=words):
        RunOptions.of(**fields)


def test_options_are_frozen_values_and_identity_leaves_out_how_to_run():
    options = RunOptions.of(budget=4, jobs=8, timeout_s=60, export="out")
    with pytest.raises(Exception):
        options.loop.budget = 5  # type: ignore[misc]
    identity = options.identity()
    assert identity["budget"] == 4 and "jobs" not in identity and "timeout_s" not in identity and "export" not in identity
    assert options.replace(jobs=1).identity() == identity, "a resumed run may use another --jobs"
    assert options.replace(rules="kernelbench").identity() != identity


# --- a run that cannot start --------------------------------------------------


@pytest.mark.parametrize("case", ["unknown provider", "missing key", "unknown backend", "unknown task", "broken task"])
def test_a_run_that_cannot_start_says_why_and_writes_nothing(tmp_path, llm_env, case):  # noqa: F811
    broken = tmp_path / "broken.py"
    broken.write_text("import torch\nclass Model(torch.nn.Module):\n    pass\n")  # no get_inputs
    tasks, options = [str(ADD_RELU)], RunOptions.of(**CPU)
    if case == "unknown provider":
        options, words = options.replace(model="nosuch:model"), "unknown provider 'nosuch'"
    elif case == "missing key":
        options, words = options.replace(model="openai:gpt-5"), "OPENAI_API_KEY is not set"
    elif case == "unknown backend":
        options, words = options.replace(backend="tpu"), "unknown backend 'tpu'"
    elif case == "unknown task":
        tasks, words = ["sofmax"], "no bundled task 'sofmax'; available: linear_gelu, relu_add, softmax"
    else:
        tasks, words = [str(broken)], "missing required name"
    memory = tmp_path / "new" / "dir" / "memory.db"
    with pytest.raises(RunError, match=words):
        evokernel.run(tasks, options, memory=memory)
    assert not (tmp_path / "new").exists(), "no file or folder is left by a run that did not start"


def test_a_damaged_memory_is_a_run_error_naming_the_file(tmp_path):
    bad = tmp_path / "memory.db"
    bad.write_bytes(b"not a database " * 100)
    with pytest.raises(RunError, match=rf"{bad} is damaged .*evokernel memory check --memory {bad}"):
        evokernel.run([str(ADD_RELU)], RunOptions.of(**CPU), memory=bad, executor=ScriptedExecutor())
    assert bad.read_bytes() == b"not a database " * 100


# --- the size is a value --------------------------------------------------------

SIZED_TASK = '''
import os
import torch
import torch.nn as nn

ROWS = 3 if os.environ.get("EVOKERNEL_SIZE", "full") == "full" else 7


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(ROWS, 33)]


def get_init_inputs():
    return []
'''

SMALL_ONLY_CANDIDATE = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        if x.shape[0] != 7:
            raise ValueError(f"ran at the full size: {tuple(x.shape)}")
        out = torch.empty_like(x)
        n = x.numel()
        relu_kernel[(triton.cdiv(n, 256),)](x, out, n, BLOCK=256)
        return out
'''


@pytest.mark.slow
def test_a_library_run_on_cpu_runs_and_stores_the_small_size(tmp_path, monkeypatch):
    """The bug: a library call on a CPU ran the small size in the worker but stored the
    results under the full-size key. Now the size is one value, in the key and the job."""
    monkeypatch.delenv("EVOKERNEL_SIZE", raising=False)
    task = tmp_path / "sized_relu.py"
    task.write_text(SIZED_TASK)
    with MemoryStore(tmp_path / "m.db") as store:
        result = evokernel.run([task], RunOptions.of(budget=1, **CPU), policy=RecordingPolicy(SMALL_ONLY_CANDIDATE),
                               store=store)
        (outcome,) = result.tasks
        assert result.size == "small" and outcome.task_key.endswith("@small")
        assert outcome.statuses == ["ok"], outcome.last_message
        assert {i.task_key for i in store.list_items(limit=None)} == {outcome.task_key}
        (trace,) = store.list_items(kinds=["trace"], limit=None)
        assert trace.extra["size"] == "small"
    assert "EVOKERNEL_SIZE" not in os.environ, "the library sets nothing in the environment"


# --- one accounting path --------------------------------------------------------

FAST, SLOW, SLOWER = "# the 106.6 ms kernel\n", "# a 3773 ms kernel\n", "# a 2000 ms kernel\n"
LATENCIES = {FAST: 106.6, SLOW: 3773.0, SLOWER: 2000.0}


def _spec(memory: Path, export: Path, **changes) -> dict:
    spec = {
        "tasks": [str(ADD_RELU)], "memory": str(memory), "sources": [SLOW, SLOWER], "latencies": LATENCIES,
        "options": {"budget": 2, "export": str(export), **CPU},
    }
    spec.update(changes)
    return spec


def _bank_with_the_fast_kernel(path: Path) -> None:
    from run_driver import run

    run({"tasks": [str(ADD_RELU)], "memory": str(path), "sources": [FAST], "latencies": LATENCIES,
         "options": {"budget": 1, "resume": False, **CPU}, "policy": "first"})


def _copy(src: Path, dst: Path) -> None:
    with contextlib.closing(sqlite3.connect(src)) as a, contextlib.closing(sqlite3.connect(dst)) as b:
        a.backup(b)


def _comparable(task: dict) -> dict:
    keep = ("correct", "attempts", "first_correct_attempt", "first_latency_ms", "best_latency_ms", "latency_source",
            "stage", "statuses", "started_from_item_id", "last_status")
    return {k: task[k] for k in keep}


def test_killed_and_resumed_continual_refinement_keeps_the_memory_best_and_exports_it(tmp_path):
    """The bug: a bank held a 106.6 ms kernel; a 2-step run tried slower ones. Straight
    through the best stayed 106.6 ms; killed after step 1 and resumed it became 3773 ms
    and --export wrote the slow kernel."""
    from run_driver import run

    straight_db, killed_db = tmp_path / "straight.db", tmp_path / "killed.db"
    _bank_with_the_fast_kernel(straight_db)
    _copy(straight_db, killed_db)

    straight = run(_spec(straight_db, tmp_path / "straight-export"))["tasks"][0]
    assert straight["best_latency_ms"] == 106.6 and straight["first_latency_ms"] == 106.6
    assert (tmp_path / "straight-export" / "task_add_relu.py").read_text() == FAST

    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(_spec(killed_db, tmp_path / "export", delays=[0.0, 120.0])))
    proc = subprocess.Popen([sys.executable, str(HERE / "run_driver.py"), str(spec)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.time() + 60
        while time.time() < deadline and proc.poll() is None:
            with MemoryStore(killed_db) as s:
                if len(s.steps(2)) >= 1:  # the second run's first step is committed; its second is evaluating
                    break
            time.sleep(0.1)
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    with MemoryStore(killed_db) as s:
        assert len(s.steps(2)) == 1 and s.runs()[-1]["status"] == "running"

    resumed = run(_spec(killed_db, tmp_path / "export"))
    assert resumed["resumed"] is True and resumed["run_id"] == 2
    task = resumed["tasks"][0]
    assert task["best_latency_ms"] == 106.6, "the memory's best stays the run's best after a resume"
    assert _comparable(task) == _comparable(straight), "a resumed run accounts exactly as a straight one"
    assert (tmp_path / "export" / "task_add_relu.py").read_text() == FAST
    with MemoryStore(killed_db) as s:
        assert len(s.steps(2)) == 2, "every step exactly once"


def test_compiled_is_feasible_everywhere(tmp_path):
    """A compile-only verdict is feasible: draft reward +1, the task refines next, and the
    experience summary says so (it used to say "infeasible")."""
    compiled = EvalResult(Verdict.COMPILED, "compiled for sm_90; not run", latency_source="none")
    executor = ScriptedExecutor(script=lambda source, n: compiled)
    policy = RecordingPolicy("# a CUDA kernel\n")
    with MemoryStore(tmp_path / "m.db") as store:
        result = evokernel.run([str(ADD_RELU)], RunOptions.of(budget=2, **CPU), policy=policy, executor=executor, store=store)
        steps = store.steps(result.run_id)
        experiences = store.list_items(kinds=["experience"], newest_first=False, limit=None)
    (task,) = result.tasks
    assert task.correct and task.statuses == ["compiled", "compiled"] and task.first_correct_attempt == 1
    assert [s["stage"] for s in steps] == ["draft", "refine"] and steps[0]["reward"] == 1.0
    assert [c.stage for c in policy.contexts] == ["draft", "refine"]
    assert all(": feasible (verdict: compiled)" in e.content for e in experiences)


def test_an_attempt_is_stored_as_the_executor_returned_it(tmp_path):
    """The trace keeps the EvalResult whole (raw timing samples included), and a resume
    rebuilds the same Attempt from it."""
    from evokernel.loop import Attempt

    result = ok(2.5, eager_ms=5.0)
    result.latency_samples_ms = [2.4, 2.5, 2.9]
    with MemoryStore(tmp_path / "m.db") as store:
        run = evokernel.run([str(ADD_RELU)], RunOptions.of(budget=1, **CPU), policy=RecordingPolicy("# k\n"),
                            executor=ScriptedExecutor(script=lambda s, n: result), store=store)
        (live,) = run.tasks[0].history
        (trace,) = store.list_items(kinds=["trace"], limit=None)
        rebuilt = Attempt.from_item(trace, step=1, stage="draft", reward=live.reward)
    assert trace.feedback["latency_samples_ms"] == [2.4, 2.5, 2.9]
    assert rebuilt == live and live.samples_ms == (2.4, 2.5, 2.9) and live.baselines.eager_ms == 5.0
    assert run.tasks[0].speedup_eager == 2.0


def test_refine_continues_every_task_of_a_bank_even_one_whose_file_moved(tmp_path):
    task = tmp_path / "add_relu_moving.py"
    task.write_text(ADD_RELU.read_text())
    memory = tmp_path / "m.db"
    evokernel.run([task], RunOptions.of(budget=1, **CPU), policy=RecordingPolicy("# first\n"),
                  executor=ScriptedExecutor(script=lambda s, n: ok(5.0)), memory=memory)
    task.unlink()  # the task file is gone: refine rebuilds it from the source the run recorded
    policy = RecordingPolicy("# faster\n")
    result = evokernel.refine(RunOptions.of(budget=2, **CPU), memory=memory, policy=policy,
                              executor=ScriptedExecutor(script=lambda s, n: ok(4.0)))
    (outcome,) = result.tasks
    assert [c.stage for c in policy.contexts] == ["refine", "refine"]
    assert outcome.first_latency_ms == 5.0 and outcome.best_latency_ms == 4.0
    assert any("rebuilt from the source recorded in the memory" in n for n in result.notes)
    with pytest.raises(RunError, match="no memory at"):
        evokernel.refine(RunOptions.of(**CPU), memory=tmp_path / "none.db")


def test_llm_flags_become_the_runs_llm_options():
    from evokernel.cli._flags import build_options
    from evokernel.options import parse_bytes

    options = build_options(dict(model=["openai:a@3", "anthropic:b"], context_tokens=4000, multi_turn=True,
                                 reasoning_effort="low", thinking_tokens=2048, budget=2, min_own_share=0.3,
                                 memory_budget_bytes=parse_bytes("2G")))
    assert [str(m) for m in options.llm.models] == ["openai:a@3", "anthropic:b"]
    assert (options.llm.context_tokens, options.llm.multi_turn, options.llm.reasoning_effort,
            options.llm.thinking_tokens) == (4000, True, "low", 2048)
    assert options.policy_label.startswith("ensemble(") and options.model == "openai:a"
    assert (options.evaluation.min_own_share, options.evaluation.memory_budget_bytes) == (0.3, 2 << 30)
    assert build_options(dict(budget=2, model=None)).llm is None  # no --model: the builtin policy
