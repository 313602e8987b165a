"""Several workers on one GPU (backends/_device_lock.py): evaluations share the device, a timing has it
alone, a waiting timing goes before evaluations that start after it, a dead holder frees it, and the
parent leaves a worker's waits out of its timeout. The locks are file locks, so two DeviceLock objects
in one process (threads here) contend as two workers do."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest

from backends import plan_devices
from backends._device_lock import DeviceLock, DeviceShare
from backends._executor import Worker
from backends._pool import DevicePlanError, ExecutorPool


def _log():
    events, lock = [], threading.Lock()

    def note(what):
        with lock:
            events.append(what)

    return events, note


def _run_together(*workers):
    threads = [threading.Thread(target=w) for w in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)


def test_a_timing_waits_for_the_evaluations_in_flight_and_runs_alone(tmp_path):
    path = tmp_path / "cuda0.lock"
    events, note = _log()
    evaluating = threading.Event()

    def evaluation():
        with DeviceLock(path).shared():
            note("eval start")
            evaluating.set()
            time.sleep(0.4)
            note("eval end")

    def timing():
        evaluating.wait()
        with DeviceLock(path).exclusive():
            note("timing start")
            time.sleep(0.1)
            note("timing end")

    _run_together(evaluation, timing)
    assert events == ["eval start", "eval end", "timing start", "timing end"]


def test_two_evaluations_share_the_device(tmp_path):
    path = tmp_path / "cuda0.lock"
    inside = threading.Barrier(2, timeout=5)  # both must be inside at once, or the barrier breaks

    def evaluation():
        with DeviceLock(path).shared():
            inside.wait()

    _run_together(evaluation, evaluation)
    assert not inside.broken


def test_a_waiting_timing_goes_before_an_evaluation_that_starts_after_it(tmp_path):
    path = tmp_path / "cuda0.lock"
    events, note = _log()
    first_in, timing_waits = threading.Event(), threading.Event()

    def first():
        with DeviceLock(path).shared():
            first_in.set()
            timing_waits.wait(5)
            time.sleep(0.3)  # the later evaluation is at the turnstile by now
            note("first end")

    def timing():
        first_in.wait()
        lock = DeviceLock(path, on_wait=lambda waiting: waiting and timing_waits.set())
        with lock.exclusive():
            note("timing")

    def later():
        timing_waits.wait(5)
        time.sleep(0.1)
        with DeviceLock(path).shared():
            note("later evaluation")

    _run_together(first, timing, later)
    assert events == ["first end", "timing", "later evaluation"]


def test_a_timing_inside_an_evaluation_gives_up_its_share_and_takes_it_back(tmp_path):
    path = tmp_path / "cuda0.lock"
    events, note = _log()
    a_timing, b_in = threading.Event(), threading.Event()

    def a():
        lock = DeviceLock(path)
        with lock.shared():
            b_in.wait(5)  # b shares the device with a
            with lock.exclusive():  # waits for b's evaluation, which does not wait for a
                note("a times")
                a_timing.set()
            note("a checks again")  # shared again: b may be back in too

    def b():
        lock = DeviceLock(path)
        with lock.shared():
            b_in.set()
            time.sleep(0.3)
            note("b end")

    _run_together(a, b)
    assert events == ["b end", "a times", "a checks again"]


def test_alone_waits_for_every_evaluation_in_flight_even_one_timing_and_goes_before_later_ones(tmp_path):
    """An evaluation run again with the GPU to itself (after running out of memory beside others) waits
    until no other evaluation holds tensors: one that is between its checks and one that has given up
    its share to time; an evaluation that starts after it asked waits for it."""
    path = tmp_path / "cuda0.lock"
    events, note = _log()
    both_in, alone_waits = threading.Barrier(3, timeout=5), threading.Event()

    def checking():
        with DeviceLock(path).shared():
            both_in.wait()
            alone_waits.wait(5)
            time.sleep(0.2)
            note("checking end")

    def timing():
        lock = DeviceLock(path)
        with lock.shared():
            both_in.wait()
            alone_waits.wait(5)
            with lock.exclusive():  # its share is given up here, its evaluation is still in flight
                time.sleep(0.1)
                note("timing")
            time.sleep(0.2)
            note("timing end")

    def again():
        both_in.wait()
        with DeviceLock(path, on_wait=lambda waiting: waiting and alone_waits.set()).alone():
            note("alone")

    def later():
        alone_waits.wait(5)
        time.sleep(0.05)
        with DeviceLock(path).shared():
            note("later evaluation")

    _run_together(checking, timing, again, later)
    assert events.index("alone") > max(events.index("checking end"), events.index("timing end"))
    assert events.index("later evaluation") > events.index("alone")
    assert not both_in.broken


def test_alone_is_refused_inside_an_evaluations_own_hold(tmp_path):
    lock = DeviceLock(tmp_path / "cuda0.lock")
    with lock.shared(), pytest.raises(RuntimeError, match="wait for itself"):
        with lock.alone():
            pass


def test_waits_are_reported_and_counted_and_a_free_device_is_taken_without_one(tmp_path):
    path = tmp_path / "cuda0.lock"
    calls = []
    free = DeviceLock(path, on_wait=calls.append)
    with free.shared():
        pass
    assert calls == [] and free.waited_s == 0.0  # nobody else: no wait to report
    holder = DeviceLock(path)
    waiter = DeviceLock(path, on_wait=calls.append)
    with holder.shared():
        t = threading.Thread(target=lambda: waiter.exclusive().__enter__())
        t.start()
        time.sleep(0.3)
    t.join(5)
    assert calls == [True, False] and waiter.waited_s >= 0.2


def test_a_killed_holder_frees_the_device(tmp_path):
    path = tmp_path / "cuda0.lock"
    code = ("import sys, time; from backends._device_lock import DeviceLock; lock = DeviceLock(sys.argv[1]); "
            "ctx = lock.exclusive(); ctx.__enter__(); print('held', flush=True); time.sleep(60)")
    holder = subprocess.Popen([sys.executable, "-c", code, str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        busy = DeviceLock(path)
        with pytest.raises(BlockingIOError):
            import fcntl

            fcntl.flock(busy._device, fcntl.LOCK_SH | fcntl.LOCK_NB)
    finally:
        holder.kill()
        holder.wait()
    start = time.monotonic()
    with DeviceLock(path).exclusive():
        assert time.monotonic() - start < 2


def test_workers_per_gpu_repeats_each_gpu_and_leaves_cpu_workers_alone():
    assert plan_devices(device=None, gpus=None, cpu_workers=2, visible_gpus=2, workers_per_gpu=2) == [
        "cuda:0", "cuda:0", "cuda:1", "cuda:1"]
    assert plan_devices(device=None, gpus=[1], cpu_workers=2, visible_gpus=2, workers_per_gpu=3) == ["cuda:1"] * 3
    assert plan_devices(device="cpu", gpus=None, cpu_workers=2, visible_gpus=0, workers_per_gpu=3) == ["cpu", "cpu"]
    with pytest.raises(DevicePlanError, match="at least 1"):
        plan_devices(device=None, gpus=None, cpu_workers=1, visible_gpus=1, workers_per_gpu=0)


def test_a_pool_gives_the_workers_of_one_gpu_one_share_and_a_lone_gpu_none():
    made = []

    class Fake:
        def __init__(self, device, device_share=None, **kwargs):
            made.append((device, device_share))

        def close(self):
            pass

    pool = ExecutorPool(["cuda:0", "cuda:0", "cuda:1"], executor_factory=Fake)
    try:
        (d0, s0), (d1, s1), (d2, s2) = made
        assert (d0, d1, d2) == ("cuda:0", "cuda:0", "cuda:1")
        assert isinstance(s0, DeviceShare) and s0 == s1 and s0.workers == 2 and s2 is None
    finally:
        pool.close()
    assert made and not __import__("os").path.exists(s0.path)  # the lock files go with the pool


def test_the_timeout_leaves_out_the_time_a_worker_waits_for_its_gpu(tmp_path):
    """A worker that waits longer than its timeout for the shared GPU, then answers, is not a timeout;
    one that says nothing for as long is."""
    def worker(name, lines):
        script = tmp_path / f"{name}.py"
        script.write_text("import json, time\n"
                          f"for line in {lines!r}:\n"
                          "    if line == 'sleep':\n        time.sleep(1.5)\n"
                          "    else:\n        print(json.dumps(line), flush=True)\n")
        w = Worker.__new__(Worker)  # the parent's side of the pipe only
        w.proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE)
        w._buffer = b""
        w.phase = w.step = w.plan = None
        w.candidate_ran = False
        return w

    step = {"phase": "harness", "step": "waiting for the device to time alone"}
    reply = {"result": {"status": "ok"}}
    waits = worker("waits", [step, {"phase": "harness", "waiting": True}, "sleep",
                             {"phase": "harness", "waiting": False}, reply])
    assert waits._read_reply(time.monotonic() + 1.0) == reply
    waits.proc.wait()
    silent = worker("silent", [step, "sleep", reply])
    with pytest.raises(TimeoutError):
        silent._read_reply(time.monotonic() + 1.0)
    silent.proc.kill()
    silent.proc.wait()


def test_workers_per_gpu_on_a_machine_that_evaluates_on_the_cpu_says_it_has_no_gpu_to_share(tmp_path, monkeypatch):
    from pathlib import Path

    import evokernel
    from evokernel.loop import _run as run_module
    from evokernel.options import RunOptions
    from loop_doubles import ScriptedExecutor

    planned = []
    monkeypatch.setattr(run_module, "make_executor",
                        lambda options, devices, jobs: planned.append(devices) or ScriptedExecutor())
    task = Path(__file__).parent / "executor_cases" / "task_add_relu.py"
    result = evokernel.run([task], RunOptions.of(budget=1, device="cpu", workers_per_gpu=2),
                           memory=tmp_path / "memory.db")
    assert planned == [["cpu"]]  # CPU workers follow --jobs, not --workers-per-gpu
    assert any("--workers-per-gpu 2 has no GPU to share here" in n for n in result.notes)
    alone = evokernel.run([task], RunOptions.of(budget=1, device="cpu"), memory=tmp_path / "memory.db")
    assert not any("workers-per-gpu" in n for n in alone.notes)


def _evaluate_with(monkeypatch, tmp_path, failures, *, workers=2):
    """`backends._evaluate.evaluate` on a GPU shared by `workers` (no GPU needed: the evaluation itself is
    replaced), whose first attempts raise `failures` in turn; what each attempt saw, and the result."""
    import fcntl

    import torch

    from backends import _evaluate as ev
    from backends._backend import LaunchLog
    from backends._evaluate import EvalOptions
    from backends._result import EvalResult, Verdict

    path = tmp_path / "cuda0.lock"
    fractions, seen = [], []
    monkeypatch.setattr(torch.cuda, "set_per_process_memory_fraction", lambda f, device=None: fractions.append(f))

    def attempt(*args):
        probe = DeviceLock(path)
        try:  # another worker's evaluation could start now, or not
            fcntl.flock(probe._evaluations, fcntl.LOCK_SH | fcntl.LOCK_NB)
            others_may_run = True
        except BlockingIOError:
            others_may_run = False
        probe.close()
        seen.append({"workers": ev._device_workers, "locked": ev._device_lock is not None, "others": others_may_run})
        attempts = sum(isinstance(e, dict) for e in seen)
        if attempts <= len(failures):
            raise failures[attempts - 1]
        return EvalResult(Verdict.OK, "correct")

    monkeypatch.setattr(ev, "_evaluate", attempt)
    result = ev.evaluate(task_path=tmp_path / "task.py", source="", backend=None, log=LaunchLog(),
                         device=torch.device("cuda", 0), options=EvalOptions(), workdir=tmp_path, cache=ev.TaskCache(),
                         compile_only=False, device_lock=DeviceLock(path) if workers > 1 else None, device_workers=workers,
                         restart_clock=lambda: seen.append("clock restarted"))
    return seen, fractions, result


def _reject(status, message, out_of_memory=False, **extra):
    from backends._evaluate import _Reject

    rej = _Reject(status, message, **extra)
    rej.out_of_memory = out_of_memory
    return rej


def test_an_evaluation_that_ran_out_of_memory_beside_others_runs_again_with_the_gpu_to_itself(tmp_path, monkeypatch):
    from backends._result import Verdict

    oom = _reject(Verdict.RUNTIME_ERROR, "out of memory on trial 1: the candidate's forward ran out of memory", True)
    seen, fractions, result = _evaluate_with(monkeypatch, tmp_path, [oom])
    assert seen == [{"workers": 2, "locked": True, "others": True},  # shared: other evaluations may run beside it
                    "clock restarted",  # the second attempt has its own CPU-time budget
                    {"workers": 1, "locked": False, "others": False}]  # again: alone, with the whole memory budget
    assert fractions == [1.0, 0.5]  # all of the memory for the re-run, its share again after
    assert result.status is Verdict.OK
    assert any("to itself: beside 1 other worker(s) it failed (out of memory on trial 1" in w for w in result.warnings)
    # the task failing (its reference out of memory, or not deterministic with less memory) is run again too
    task = _reject(Verdict.TASK_ERROR, "the reference is not deterministic")
    seen, _, result = _evaluate_with(monkeypatch, tmp_path, [task])
    assert len(seen) == 3 and result.status is Verdict.OK


def test_a_wrong_result_without_room_for_the_float64_reference_runs_again_with_the_gpu_to_itself(tmp_path, monkeypatch):
    import torch

    from backends._oracle import Oracle
    from backends._result import Verdict

    oracle = Oracle(reference=torch.nn.Identity(), device=torch.device("cuda", 0))
    monkeypatch.setattr("backends._oracle.device_free_bytes", lambda device: 1 << 30)  # 1 GiB free
    x = torch.empty(2**27)  # 512 MiB, 1 GiB widened to float64
    why = oracle.crowds_out([x], x.clone())
    assert why and Oracle.crowded_out(why)
    judged_alone = _reject(Verdict.WRONG_RESULT, "wrong result on trial 2", oracle_unavailable=why)
    seen, fractions, result = _evaluate_with(monkeypatch, tmp_path, [judged_alone])
    assert len(seen) == 3 and fractions == [1.0, 0.5] and result.status is Verdict.OK
    # the estimate fitted but the float64 run itself ran out of memory (level1's cumsums in bf16 beside a
    # second worker): crowded out too
    class OutOfMemoryInFloat64(torch.nn.Module):
        def forward(self, x):
            if x.dtype == torch.float64:
                raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 8.00 GiB.")
            return x

    oracle = Oracle(reference=OutOfMemoryInFloat64(), device=torch.device("cuda", 0))
    monkeypatch.setattr("backends._oracle.device_free_bytes", lambda device: 1 << 40)
    y = torch.ones(4)
    assert oracle.exact([y], y.clone()) is None
    assert Oracle.crowded_out(oracle.unavailable) and "ran out of memory" in oracle.unavailable
    # on the CPU, or failing otherwise, it is the reference that does not run in float64
    cpu = Oracle(reference=OutOfMemoryInFloat64(), device=torch.device("cpu"))
    assert cpu.exact([y], y.clone()) is None and not Oracle.crowded_out(cpu.unavailable)
    # a wrong result with no float64 reference for another reason is the verdict
    other = _reject(Verdict.WRONG_RESULT, "wrong result on trial 2",
                    oracle_unavailable="the reference does not run in float64: RuntimeError: no kernel")
    seen, _, result = _evaluate_with(monkeypatch, tmp_path, [other])
    assert len(seen) == 1 and result.status is Verdict.WRONG_RESULT


def test_a_wrong_result_or_a_lone_worker_is_not_run_again(tmp_path, monkeypatch):
    from backends._result import Verdict

    wrong = _reject(Verdict.WRONG_RESULT, "wrong result on trial 1")
    seen, fractions, result = _evaluate_with(monkeypatch, tmp_path, [wrong])
    assert len(seen) == 1 and fractions == [] and result.status is Verdict.WRONG_RESULT
    oom = _reject(Verdict.RUNTIME_ERROR, "out of memory on trial 1", True)
    seen, fractions, result = _evaluate_with(monkeypatch, tmp_path, [oom], workers=1)
    assert len(seen) == 1 and fractions == [] and result.status is Verdict.RUNTIME_ERROR
    # failing again alone is the verdict: it is not run a third time
    seen, _, result = _evaluate_with(monkeypatch, tmp_path, [oom, oom])
    assert len(seen) == 3 and result.status is Verdict.RUNTIME_ERROR and result.warnings


AUTOTUNED = '''
import contextlib, json
import torch, triton, triton.language as tl
from triton.runtime import autotuner
from backends import _device_lock
from backends.triton_backend import _time_configs_alone

_time_configs_alone(autotuner.Autotuner)
events = []


@contextlib.contextmanager
def alone():
    events.append("alone")
    yield
    events.append("shared")


_device_lock.set_timing_guard(alone)


def timer(kernel_call, quantiles):
    events.append("timed")
    kernel_call()
    return [1.0, 1.0, 1.0]


def ran(nargs):
    events.append("run")


@triton.autotune(configs=[triton.Config({"B": 16}, pre_hook=ran), triton.Config({"B": 32}, pre_hook=ran)],
                 key=["n"], do_bench=timer)
@triton.jit
def double(x, y, n, B: tl.constexpr):
    o = tl.program_id(0) * B + tl.arange(0, B)
    tl.store(y + o, tl.load(x + o, mask=o < n) * 2, mask=o < n)


x, y = torch.randn(100), torch.empty(100)
double[lambda m: (triton.cdiv(100, m["B"]),)](x, y, 100)
print(json.dumps({"events": events, "correct": bool(torch.equal(y, 2 * x))}))
'''


def test_the_autotuner_compiles_each_configuration_beside_others_and_times_it_alone(tmp_path):
    """On a shared GPU a neighbour's kernels would pick the autotuner's configuration: each one is run once
    (its compile) outside the hold and timed inside it (backends/triton_backend.py, _time_configs_alone)."""
    import json
    import os
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    (tmp_path / "autotuned.py").write_text(AUTOTUNED)
    env = dict(os.environ, TRITON_INTERPRET="1")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), env.get("PYTHONPATH", "")) if p)
    proc = subprocess.run([sys.executable, str(tmp_path / "autotuned.py")], capture_output=True, text=True,
                          timeout=300, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    per_config = ["run", "alone", "timed", "run", "shared"]
    assert out["events"][:10] == per_config * 2, out["events"]
    assert out["correct"]


def test_an_autotuner_timing_inside_the_evaluations_own_timing_keeps_the_device_alone(tmp_path):
    path = tmp_path / "cuda0.lock"
    lock = DeviceLock(path)
    with lock.shared(), lock.exclusive():
        with lock.exclusive():  # re-entered: a no-op
            pass
        other = DeviceLock(path)  # still alone after the inner one ended
        import fcntl

        with pytest.raises(BlockingIOError):
            fcntl.flock(other._device, fcntl.LOCK_SH | fcntl.LOCK_NB)
