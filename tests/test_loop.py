"""The loop end to end on CPU: the builtin policy on several tasks, both LLM
providers against a local server, resume after a kill, and memory modes.

Tests about what a step sees (retrieval, memory modes) use a scripted executor
(`loop_doubles`); tests about verdicts run real candidates in one shared CPU
worker (`cpu_executor`)."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import evokernel
from evokernel import RunOptions
from evokernel.policies import get_policy
from memory_store import MemoryStore

from executor_candidates import HONEST
from llm_server import anthropic_reply, llm_env, local_llm, openai_reply, server  # noqa: F401  (fixtures)
from loop_doubles import RecordingPolicy, ScriptedExecutor

CASES = Path(__file__).parent / "executor_cases"
ADD_RELU = CASES / "task_add_relu.py"
FAST = dict(trials=2, timeout_s=120, device="cpu", jobs=1)


def run_tasks(tasks, policy, store, options, *, executor, **kw):
    return evokernel.run(tasks, options, policy=policy, store=store, executor=executor, **kw)


@pytest.mark.slow
def test_builtin_policy_end_to_end_learns_values(tmp_path, cpu_executor):
    tasks = [CASES / "task_add_relu.py", CASES / "task_row_softmax.py", CASES / "task_bias_scale.py", CASES / "task_linear_relu.py"]
    with MemoryStore(tmp_path / "m.db") as store:
        result = run_tasks(tasks, get_policy(), store, RunOptions.of(budget=2, **FAST), executor=cpu_executor)
        assert [t.correct for t in result.tasks] == [True, True, True, True]
        assert all(t.attempts == 2 and t.first_correct_attempt == 1 for t in result.tasks)
        assert all(t.latency_source == "interpreted-cpu" for t in result.tasks)
        steps = store.steps(result.run_id)
        assert len(steps) == 8
        assert [s["stage"] for s in steps[:4]] == ["draft"] * 4 and [s["stage"] for s in steps[4:]] == ["refine"] * 4
        stats = store.stats()
        assert stats["value_updates"] > 0, "later tasks must have retrieved and credited earlier items"
        # a refine step 1.2x faster than its start point may also have taught a skill (tests/test_skills.py)
        assert {k: v for k, v in stats["by_kind"].items() if k != "best_practice"} == {"trace": 8, "experience": 8}
        # Draft values moved toward +1 for items that were in a successful draft's context
        items = store.list_items(kinds=["trace"], limit=None)
        assert any(i.visits_draft > 0 and i.q_draft > 0 for i in items)
        # The refine steps started from the drafts: their traces point at them
        assert all(i.parent_id is not None for i in items if i.stage == "refine")


def test_builtin_policy_stops_honestly_outside_its_families(tmp_path, cpu_executor):
    qr = tmp_path / "qr.py"
    qr.write_text(
        "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n    def forward(self, x):\n"
        "        return torch.linalg.qr(x)[1]\n\n\ndef get_inputs():\n    return [torch.randn(6, 6)]\n\n\n"
        "def get_init_inputs():\n    return []\n"
    )
    with MemoryStore(tmp_path / "m.db") as store:
        result = run_tasks([qr], get_policy(), store, RunOptions.of(budget=3, **FAST), executor=cpu_executor)
    (task,) = result.tasks
    assert not task.correct and task.attempts == 0
    assert "outside the builtin policy's families" in task.stopped


def _llm_answer() -> str:
    return "Here is the kernel.\n\n```python\n" + HONEST["add_relu"][1].strip() + "\n```\n"


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_llm_policy_prompt_carries_task_memories_then_start_point(tmp_path, server, monkeypatch, provider, cpu_executor):
    if provider == "openai":
        server.default = openai_reply(_llm_answer())
    else:
        server.default = anthropic_reply(_llm_answer())
    with MemoryStore(tmp_path / "m.db") as store:
        seeded = store.add_item(
            kind="experience", task_key="other-task", backend="triton", category="elementwise",
            key_text="task_add_relu elementwise triton relu add torch", content="SEEDED-LESSON: mask the tail of the last block",
            status="ok",
        )
        policy = get_policy(llm=local_llm(server, f"{provider}:test-model"), log=store)
        first = run_tasks([ADD_RELU], policy, store, RunOptions.of(budget=1, **FAST), executor=cpu_executor)
        assert first.tasks[0].correct
        body = json.dumps(server.requests[0].body)
        assert "torch.relu(x + y) * 2.0" in body, "the prompt carries the task's reference"
        assert "SEEDED-LESSON" in body, "the prompt carries the retrieved memory"
        assert "Start point" not in body
        # The seeded item was in the context of a feasible draft: its draft value rose.
        assert store.get_item(seeded).q_draft > 0
        # A second run starts from the stored kernel: refining, with the start point in the prompt.
        second = run_tasks([ADD_RELU], get_policy(llm=local_llm(server, f"{provider}:test-model"), log=store), store,
                           RunOptions.of(budget=1, resume=False, **FAST), executor=cpu_executor)
        assert second.tasks[0].stage == "refine"
        body2 = json.dumps(server.requests[-1].body)
        assert "Start point" in body2 and "add_relu_kernel" in body2
        calls = store.llm_calls()
        assert len(calls) == 2 and all(c["model"] == "test-model" for c in calls)
        assert "sk-test-not-a-real-key" not in json.dumps(calls) and "sk-ant-test" not in json.dumps(calls)


def test_llm_answer_without_code_is_fed_back(tmp_path, server, monkeypatch, cpu_executor):
    server.script = [openai_reply("I would write a Triton kernel here, but no code today.")]
    server.default = openai_reply(_llm_answer())
    with MemoryStore(tmp_path / "m.db") as store:
        result = run_tasks([ADD_RELU], get_policy(llm=local_llm(server, "openai:test-model"), log=store), store, RunOptions.of(budget=2, **FAST),
                           executor=cpu_executor)
    task = result.tasks[0]
    assert task.statuses == ["compile_error", "ok"] and task.first_correct_attempt == 2
    second_prompt = json.dumps(server.requests[1].body)
    assert "no code" in second_prompt.lower() or "code block" in second_prompt.lower()


@pytest.mark.parametrize("mode", ["off", "task-only", "similarity", "value"])
def test_memory_modes_change_what_is_retrieved(tmp_path, mode):
    with MemoryStore(tmp_path / "m.db") as store:
        # Another task's experiences: a close one with a low value and a far one with a high value.
        run = store.start_run({})
        close = store.add_item(kind="experience", task_key="other", backend="triton", key_text="task_add_relu add relu elementwise triton torch",
                               content="close", status="ok")
        far = store.add_item(kind="experience", task_key="other", backend="triton", key_text="add", content="far", status="ok")
        for _ in range(5):
            store.record_step(run_id=run, task_key="other", backend="triton", stage="draft", reward=1.0, context_item_ids=[far])
            store.record_step(run_id=run, task_key="other", backend="triton", stage="draft", reward=-1.0, context_item_ids=[close])
        store.finish_run(run)
        # This task's own history, from a first run.
        warm = RecordingPolicy(HONEST["add_relu"][1])
        run_tasks([ADD_RELU], warm, store, RunOptions.of(budget=1, memory_mode="off", **FAST), executor=ScriptedExecutor())
        policy = RecordingPolicy(HONEST["add_relu"][1])
        run_tasks([ADD_RELU], policy, store, RunOptions.of(budget=1, memory_mode=mode, n_memories=1, resume=False, **FAST),
                  executor=ScriptedExecutor())
        seen = policy.contexts[0].memories
    if mode == "off":
        assert seen == []
    elif mode == "task-only":
        assert seen and all(m.task_key != "other" for m in seen)
    elif mode == "similarity":
        assert [m.content for m in seen] != ["far"]
    else:
        # epsilon 0.1 with this seed takes the greedy pick: the item with the highest Q_refine or Q_draft
        assert seen


def _seed_close_and_far(store: MemoryStore) -> None:
    """Another task's experiences: one close to this task's text but with a low
    value, one far from it but with a high value."""
    run = store.start_run({})
    close = store.add_item(kind="experience", task_key="other", backend="triton",
                           key_text="task_add_relu add relu elementwise triton torch forward", content="close", status="ok")
    far = store.add_item(kind="experience", task_key="other", backend="triton", key_text="relu", content="far", status="ok")
    for _ in range(5):
        store.record_step(run_id=run, task_key="other", backend="triton", stage="draft", reward=1.0, context_item_ids=[far])
        store.record_step(run_id=run, task_key="other", backend="triton", stage="draft", reward=-1.0, context_item_ids=[close])
    store.finish_run(run)


def test_value_mode_prefers_valuable_over_similar(tmp_path):
    picks = {}
    for mode in ("similarity", "value"):
        with MemoryStore(tmp_path / f"{mode}.db") as store:
            _seed_close_and_far(store)
            policy = RecordingPolicy(HONEST["add_relu"][1])
            run_tasks([ADD_RELU], policy, store, RunOptions.of(budget=1, memory_mode=mode, n_memories=1, seed=3, **FAST),
                      executor=ScriptedExecutor())
            picks[mode] = [m.content for m in policy.contexts[0].memories]
    assert picks["similarity"] == ["close"]
    assert picks["value"] == ["far"]


def test_a_trace_keeps_the_memories_its_step_was_shown_beside_those_it_credits(tmp_path):
    """A policy that follows one memory credits only that one (the steps table); the trace keeps every
    memory the step was shown, so a run can be read for the evidence a step saw and did not follow."""

    class FollowsOne(RecordingPolicy):
        def propose(self, ctx):
            proposal = super().propose(ctx)
            return dataclasses.replace(proposal, used_memory_ids=tuple(m.id for m in ctx.memories[:1]))

    with MemoryStore(tmp_path / "m.db") as store:
        _seed_close_and_far(store)
        policy = FollowsOne(HONEST["add_relu"][1])
        run_tasks([ADD_RELU], policy, store, RunOptions.of(budget=1, memory_mode="similarity", n_memories=2, **FAST),
                  executor=ScriptedExecutor())
        shown = [m.id for m in policy.contexts[0].memories]
        trace = next(i for i in store.list_items(kinds=["trace"], limit=None) if i.task_key != "other")
        step = store.steps()[-1]
    assert len(shown) == 2
    assert trace.extra["memories_shown"] == shown
    assert step["context_item_ids"] == shown[:1]


def _alive(pid: str) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.slow
def test_a_concurrent_run_resumes_after_sigkill_without_losing_or_doubling_a_step(tmp_path):
    """The real command, two steps in flight, killed at an arbitrary point and run again."""
    db = tmp_path / "m.db"
    env = {k: v for k, v in os.environ.items() if k != "EVOKERNEL_SIZE"}
    cmd = [sys.executable, "-m", "evokernel.cli", "run", str(CASES / "task_add_relu.py"), str(CASES / "task_row_softmax.py"),
           "--budget", "2", "--jobs", "2", "--trials", "2", "--memory", str(db), "--json"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None:
        time.sleep(0.2)
        if db.exists():
            with MemoryStore(db) as s:
                if len(s.steps()) >= 1:
                    break
    workers = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.time() + 10
    while time.time() < deadline and any(_alive(w) for w in workers):
        time.sleep(0.2)
    assert workers and not any(_alive(w) for w in workers), "the run's workers die with it"
    with MemoryStore(db) as s:
        done_before = len(s.steps())
        assert s.integrity_check() == []
        assert s.runs()[-1]["status"] == "running"
    assert 1 <= done_before < 4
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    data = json.loads(out.stdout.strip().splitlines()[-1])
    assert data["resumed"] is True and data["jobs"] == 2
    assert [t["attempts"] for t in data["tasks"]] == [2, 2]
    with MemoryStore(db) as s:
        steps = s.steps(data["run_id"])
        assert len(steps) == 4, "every step exactly once: none lost, none repeated"
        assert s.stats()["by_kind"]["trace"] == 4
        assert sorted((st["task_key"], st["stage"]) for st in steps) == sorted(
            (t["task_key"], stage) for t in data["tasks"] for stage in ("draft", "refine"))


def test_independent_samples_draft_afresh_every_step(tmp_path):
    policy = RecordingPolicy(HONEST["add_relu"][1])
    with MemoryStore(tmp_path / "m.db") as store:
        result = run_tasks([ADD_RELU], policy, store, RunOptions.of(budget=3, independent_samples=True, **FAST),
                           executor=ScriptedExecutor())
        steps = store.steps(result.run_id)
    assert [c.stage for c in policy.contexts] == ["draft"] * 3
    assert all(c.memories == [] and c.feedback is None and c.start_point is None and not c.tried for c in policy.contexts)
    assert [s["stage"] for s in steps] == ["draft"] * 3 and [s["reward"] for s in steps] == [1.0] * 3


def test_continual_refinement_keeps_the_memory_best_as_the_one_to_beat(tmp_path, cpu_executor):
    with MemoryStore(tmp_path / "m.db") as store:
        run_tasks([ADD_RELU], RecordingPolicy(HONEST["add_relu"][1]), store, RunOptions.of(budget=1, **FAST),
                  executor=cpu_executor)
        (start,) = store.feasible_items(store.steps()[0]["task_key"], "triton", statuses=["ok", "compiled"])
        slower = HONEST["add_relu"][1]
        policy = RecordingPolicy(slower)
        result = run_tasks([ADD_RELU], policy, store, RunOptions.of(budget=1, resume=False, **FAST), executor=cpu_executor)
    task = result.tasks[0]
    assert policy.contexts[0].stage == "refine" and policy.contexts[0].start_point.id == start.id
    assert task.first_latency_ms == start.latency_ms and task.started_from_item_id == start.id
    assert task.best_latency_ms <= start.latency_ms, "the best kernel is never worse than the one the run started from"
    assert task.speedup_over_first >= 1.0


def test_a_refinement_starts_from_the_fastest_comparable_kernel_not_the_highest_value(tmp_path):
    """A successful refinement raises its start point's Q_refine while the faster kernel it made
    starts at zero: the next step must still start from the faster one."""
    import random

    from evokernel.loop import choose_start

    with MemoryStore(tmp_path / "m.db") as store:
        def kernel(latency, q, source="measured-gpu"):
            item = store.add_item(kind="trace", task_key="t", backend="triton", key_text="k", content="c",
                                  status="ok", latency_ms=latency, latency_source=source)
            store.conn.execute("UPDATE items SET q_refine = ? WHERE id = ?", (q, item))
            return store.get_item(item)

        parent, child = kernel(2.0, 0.9), kernel(1.0, 0.0)
        foreign, untimed = kernel(0.5, 0.0, source="interpreted-cpu"), kernel(None, 2.0)
        def on_gpu(item):
            return item.latency_source == "measured-gpu"

        rng = random.Random(0)
        assert choose_start([parent, child, foreign, untimed], rng, 0.0, on_gpu).id == child.id
        # Without a comparable timed kernel, the value decides.
        assert choose_start([foreign, untimed], rng, 0.0, on_gpu).id == untimed.id
        picks = {choose_start([parent, child], random.Random(s), 1.0, on_gpu).id for s in range(20)}
        assert picks == {parent.id, child.id}
