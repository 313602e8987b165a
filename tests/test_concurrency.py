"""Steps in flight at once (`--jobs`): LLM calls overlap, a 429 holds every call,
GPU workers are planned one per device and pinned, a worker whose memory grows
is retired, results at --jobs 1 are today's, and a run on the Ray engine."""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path

import pytest

import evokernel
from backends import Baselines, EvalResult, ExecutorPool, MemoryPlan, MemoryWatch, Verdict, plan_devices
from backends import DevicePlanError
from backends._executor import physical_gpu
from evokernel import RunOptions
from evokernel.llm import LLMClient
from evokernel.llm._backoff import SharedBackoff
from evokernel.policies import get_policy
from memory_store import MemoryStore

from executor_candidates import HONEST
from llm_server import error_reply, llm_env, local_llm, openai_reply, server  # noqa: F401  (fixtures)
from loop_doubles import RecordingPolicy, ScriptedExecutor, ok

HERE = Path(__file__).parent
ADD_RELU = HERE / "executor_cases" / "task_add_relu.py"
CPU = dict(device="cpu", trials=2)


def _tasks(tmp_path: Path, n: int) -> list[Path]:
    """n distinct tasks (their own names, so their own memory keys) of one computation."""
    paths = []
    for i in range(n):
        p = tmp_path / f"add_relu_{i:02d}.py"
        shutil.copy(ADD_RELU, p)
        paths.append(p)
    return paths


# --- LLM calls in flight at once ------------------------------------------------


def test_llm_calls_go_out_concurrently(tmp_path, server, monkeypatch):  # noqa: F811
    answer = "```python\n" + HONEST["add_relu"][1].strip() + "\n```\n"
    reply = openai_reply(answer)
    reply.delay_s = 1.0
    server.default = reply
    events = []
    with MemoryStore(tmp_path / "m.db") as store:
        result = evokernel.run(_tasks(tmp_path, 4), RunOptions.of(budget=1, jobs=4, **CPU),
                               policy=get_policy(llm=local_llm(server, "openai:test-model"), log=store), store=store,
                               executor=ScriptedExecutor(), on_event=events.append)
        calls = store.llm_calls()
    assert len(calls) == 4 and all(t.correct for t in result.tasks)
    assert server.peak_in_flight > 1, "requests overlapped at the server"
    assert max(e.stats.peak_proposing for e in events) > 1
    assert result.jobs == 4


def test_a_rate_limit_holds_every_call_to_the_provider():
    """One call gets a 429 with Retry-After; a call sent while that hold is on waits it out."""
    from evokernel.llm import ProviderCallError
    from evokernel.llm._types import Completion

    sent: list[tuple[str, float]] = []
    first = threading.Event()

    class Provider:
        def complete(self, messages, *, system, max_tokens, temperature):
            who = messages[0]["content"]
            sent.append((who, time.monotonic()))
            if who == "a" and not first.is_set():
                first.set()
                raise ProviderCallError("rate limited", status=429, retryable=True, retry_after_s=0.6)
            return Completion(text="ok", tokens_in=1, tokens_out=1, finish_reason="stop", truncated=False,
                              model="m", latency_ms=1.0)

    backoff = SharedBackoff()
    clients = [LLMClient(Provider(), provider_name="p", model="m", backoff=backoff) for _ in range(2)]
    a = threading.Thread(target=lambda: clients[0].complete([{"role": "user", "content": "a"}]))
    a.start()
    first.wait(5)
    time.sleep(0.1)
    clients[1].complete([{"role": "user", "content": "b"}])
    a.join(5)
    limited_at = sent[0][1]
    b_sent = next(t for who, t in sent if who == "b")
    assert b_sent - limited_at >= 0.55, "a call sent during the hold waited for it"
    assert [who for who, _ in sent].count("a") == 2 and backoff.holds == 1


def test_shared_backoff_keeps_the_longest_hold():
    now = [0.0]
    slept = []

    def sleep(s):
        slept.append(s)
        now[0] += s

    b = SharedBackoff(clock=lambda: now[0], sleep=sleep)
    b.hold(2.0)
    b.hold(0.5)  # a shorter hold does not shorten the first
    b.wait()
    assert slept == [2.0] and b.remaining_s() == 0.0
    b.wait()
    assert slept == [2.0], "no hold, no wait"


# --- one worker per GPU ----------------------------------------------------------


def test_two_visible_gpus_get_two_workers_each_pinned_to_its_own():
    assert plan_devices(device=None, gpus=None, cpu_workers=8, visible_gpus=2) == ["cuda:0", "cuda:1"]
    assert plan_devices(device=None, gpus=(1,), cpu_workers=8, visible_gpus=2) == ["cuda:1"]
    assert plan_devices(device="cuda:1", gpus=None, cpu_workers=8, visible_gpus=2) == ["cuda:1"]
    assert plan_devices(device=None, gpus=None, cpu_workers=3, visible_gpus=0) == ["cpu", "cpu", "cpu"]
    with pytest.raises(DevicePlanError, match="2 GPU"):
        plan_devices(device=None, gpus=(0, 2), cpu_workers=1, visible_gpus=2)
    # CUDA_VISIBLE_DEVICES=4,7 in the parent: its cuda:0 and cuda:1 are physical GPUs 4 and 7
    assert [physical_gpu(d, "4,7") for d in ("cuda:0", "cuda:1")] == ["4", "7"]
    assert [physical_gpu(d, None) for d in ("cuda:0", "cuda:1")] == ["0", "1"]


def test_the_pool_never_runs_two_candidates_on_one_device():
    class FakeExecutor(ScriptedExecutor):
        busy: dict[str, int] = {}
        overlaps: list[str] = []
        used: list[str] = []
        lock = threading.Lock()

        def __init__(self, *, device, **kwargs):
            super().__init__()
            self.device = device

        def evaluate(self, task_path, source, **kwargs):
            with self.lock:
                FakeExecutor.busy[self.device] = FakeExecutor.busy.get(self.device, 0) + 1
                if FakeExecutor.busy[self.device] > 1:
                    FakeExecutor.overlaps.append(self.device)
                FakeExecutor.used.append(self.device)
            time.sleep(0.05)
            with self.lock:
                FakeExecutor.busy[self.device] -= 1
            return ok(1.0)

        def close(self):
            pass

    pool = ExecutorPool(plan_devices(device=None, gpus=None, cpu_workers=1, visible_gpus=2), executor_factory=FakeExecutor)
    threads = [threading.Thread(target=pool.evaluate, args=("t.py", "src")) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert FakeExecutor.overlaps == [] and sorted(set(FakeExecutor.used)) == ["cuda:0", "cuda:1"]
    assert pool.stats().evaluations == 8 and pool.stats().workers == 2


def _gpu_result(free_gib: float, reused: bool) -> EvalResult:
    gib = 1 << 30
    plan = MemoryPlan(device="cuda:0", input_bytes=0, output_bytes=0, weight_bytes=0, flush_bytes=0, compare_bytes=0,
                      outputs_estimated=False, needed_bytes=0, available_bytes=int(free_gib * gib),
                      available_from="free memory of a test GPU")
    r = EvalResult(Verdict.OK, "ok", latency_ms=1.0, baselines=Baselines(), device="cuda:0", memory=plan)
    r.worker_reused = reused
    return r


def test_a_worker_whose_gpu_memory_keeps_growing_is_retired():
    watch = MemoryWatch(max_growth_bytes=4 << 30, growth_jobs=3, min_step_bytes=1 << 20)
    assert not watch.observe(1, _gpu_result(70.0, reused=False))
    assert not watch.observe(1, _gpu_result(70.0, reused=True)), "steady memory keeps the worker"
    assert not watch.observe(1, _gpu_result(69.9, reused=True))
    assert not watch.observe(1, _gpu_result(69.8, reused=True))
    assert watch.observe(1, _gpu_result(69.7, reused=True)), "three losses in a row"
    assert not watch.observe(2, _gpu_result(70.0, reused=False))
    assert watch.observe(2, _gpu_result(65.0, reused=True)), "a loss beyond the limit at once"
    assert not watch.observe(3, ok(1.0)), "a CPU result has no GPU memory to watch"


# --- the memory stays correct ---------------------------------------------------


def _memory(path: Path, *, values: bool = True) -> dict:
    """What a run left in the memory, without ids, times or run numbers."""
    with MemoryStore(path) as s:
        items = [(i.kind, i.task_key, i.stage, i.status, i.latency_ms, i.visits_draft, i.visits_refine, i.content)
                 + ((round(i.q_draft, 9), round(i.q_refine, 9)) if values else ())
                 for i in s.list_items(limit=None, newest_first=False)]
        ids = {i.id: n for n, i in enumerate(s.list_items(limit=None, newest_first=False))}
        steps = [(st["task_key"], st["stage"], st["reward"], [ids[c] for c in st["context_item_ids"]])
                 for st in s.steps()]
    return {"items": items, "steps": steps}


def _scripted(source, n):
    return ok(10.0 / (1 + len(source) % 7))


def test_jobs_1_is_the_sequential_loop_and_jobs_n_sees_the_iteration_s_snapshot(tmp_path):
    tasks = _tasks(tmp_path, 3)
    sources = [HONEST["add_relu"][1], HONEST["add_relu"][1] + "\n# v2\n", HONEST["add_relu"][1] + "\n# v3 longer\n"]
    runs = {}
    for name, jobs in (("one", 1), ("one-again", 1), ("four", 4)):
        policy = RecordingPolicy(*sources)
        evokernel.run(tasks, RunOptions.of(budget=3, jobs=jobs, seed=7, **CPU), policy=policy,
                      executor=ScriptedExecutor(script=_scripted), memory=tmp_path / f"{name}.db")
        runs[name] = (policy, _memory(tmp_path / f"{name}.db"))
    assert runs["one"][1] == runs["one-again"][1], "a seeded run at --jobs 1 is reproducible"
    first_iteration = lambda policy: {c.task_name: {m.task_key for m in c.memories} for c in policy.contexts if c.step == 1}  # noqa: E731
    seq, par = first_iteration(runs["one"][0]), first_iteration(runs["four"][0])
    # one job: the third task's first step already sees what the first two wrote in this iteration
    assert len(seq["add_relu_02"]) == 2
    # four jobs: every first step sees the bank as it was when the iteration began (empty)
    assert all(not keys for keys in par.values())
    assert [s[:3] for s in runs["four"][1]["steps"]] != [] and len(runs["four"][1]["steps"]) == 9


def test_jobs_do_not_change_results_where_tasks_do_not_share(tmp_path):
    """With memories retrieved per task only, a run at --jobs 4 leaves the same items, visits
    and rewards as --jobs 1. (Refine values can differ in the last digits: refine rewards are
    normalised by running statistics over all steps, which see the steps in commit order.)"""
    tasks = _tasks(tmp_path, 4)
    sources = [HONEST["add_relu"][1], HONEST["add_relu"][1] + "\n# v2\n"]
    for name, jobs in (("one", 1), ("four", 4)):
        evokernel.run(tasks, RunOptions.of(budget=2, jobs=jobs, memory_mode="task-only", **CPU),
                      policy=RecordingPolicy(*sources), executor=ScriptedExecutor(script=_scripted,
                                                                                  delay=lambda n: 0.01 * (n % 3)),
                      memory=tmp_path / f"{name}.db")
    one, four = _memory(tmp_path / "one.db", values=False), _memory(tmp_path / "four.db", values=False)
    assert sorted(one["items"]) == sorted(four["items"])
    rewards = lambda m: sorted((key, stage, reward) for key, stage, reward, _ in m["steps"])  # noqa: E731
    assert rewards(one) == rewards(four) and len(four["steps"]) == 8


def test_evaluations_run_concurrently_and_each_step_commits_once(tmp_path):
    executor = ScriptedExecutor(delay=lambda n: 0.3)
    with MemoryStore(tmp_path / "m.db") as store:
        started = time.monotonic()
        result = evokernel.run(_tasks(tmp_path, 6), RunOptions.of(budget=2, jobs=6, **CPU), policy=RecordingPolicy("# k\n"),
                               executor=executor, store=store)
        wall = time.monotonic() - started
        assert len(store.steps(result.run_id)) == 12 and store.integrity_check() == []
    assert executor.peak_in_flight > 1 and wall < 12 * 0.3
    assert all(t.attempts == 2 for t in result.tasks)


# --- Ray ------------------------------------------------------------------------


@pytest.mark.slow
def test_a_run_on_the_ray_engine_on_cpu(tmp_path):
    ray = pytest.importorskip("ray", reason="the Ray engine needs pip install 'evokernel[ray]'")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        with MemoryStore(tmp_path / "m.db") as store:
            result = evokernel.run([ADD_RELU], RunOptions.of(budget=1, jobs=1, engine="ray", **CPU),
                                   policy=RecordingPolicy(HONEST["add_relu"][1]), store=store)
            (task,) = result.tasks
            assert task.statuses == ["ok"] and task.latency_source == "interpreted-cpu"
            assert len(store.steps(result.run_id)) == 1, "the driver wrote the step"
            (trace,) = store.list_items(kinds=["trace"], limit=None)
            assert trace.feedback["device"] == "cpu"
    finally:
        ray.shutdown()


def test_a_result_and_its_attempt_name_the_gpu_it_ran_on(monkeypatch):
    """The worker sees its pinned GPU as cuda:0; the result says which of the parent's GPUs it was
    (benchmarks/bench_jobs.py compares a task's latency on GPU 0 with GPU 1 by it)."""
    import backends._executor as executor_module
    from backends import EvalResult, Executor, Verdict
    from evokernel.loop._types import Attempt

    class PinnedWorker:
        def __init__(self, device, **kwargs):
            self.device, self.jobs_done = device, 0

        def alive(self):
            return True

        def run(self, job, timeout_s):
            return EvalResult(Verdict.OK, "ok", latency_ms=1.0, device="cuda:0"), False

        def close(self):
            pass

    monkeypatch.setattr(executor_module, "Worker", PinnedWorker)
    result = Executor(device="cuda:1").evaluate("task.py", "source")
    assert result.device == "cuda:1"
    assert Attempt.from_result(result, step=1, stage="draft").to_dict()["device"] == "cuda:1"
