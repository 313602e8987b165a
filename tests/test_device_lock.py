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
