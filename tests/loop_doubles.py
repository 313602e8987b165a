"""Test doubles for the loop: a policy that offers scripted candidates and
records what it saw, and an executor that answers from a script.

The scripted executor stands in where a test is about the loop's bookkeeping
(retrieval, rewards, resume, accounting), not about verdicts: it returns real
`EvalResult`s, so everything downstream is the production path. Tests about
verdicts use the real `backends.Executor`.
"""

from __future__ import annotations

import threading
import time
from typing import Callable

from backends import Baselines, EvalResult, RetimeReport, Verdict
from evokernel.loop import Proposal


class RecordingPolicy:
    """Offers `sources[step - 1]` (the last one repeated), and records every context."""

    is_llm = False

    def __init__(self, *sources: str, name: str = "recording", delay_s: float = 0.0):
        self.sources = list(sources)
        self.name = name
        self.delay_s = delay_s
        self.contexts = []
        self._lock = threading.Lock()

    def propose(self, ctx):
        with self._lock:
            self.contexts.append(ctx)
        if self.delay_s:
            time.sleep(self.delay_s)
        source = self.sources[min(ctx.step, len(self.sources)) - 1]
        return Proposal(source, key_text=f"{ctx.task_name} add relu elementwise", fingerprint=f"step{ctx.step}",
                        extra={"proposed": source[:40]})


def ok(latency_ms: float | None, *, source: str = "interpreted-cpu", eager_ms: float | None = None) -> EvalResult:
    return EvalResult(Verdict.OK, "correct", latency_ms=latency_ms, latency_source=source,
                      latency_samples_ms=[latency_ms] * 3 if latency_ms else [], baselines=Baselines(eager_ms=eager_ms),
                      device="cpu", trials=2)


class ScriptedExecutor:
    """`evaluate` answers `script(source, call_number)`; `delay(call_number)` seconds first.

    Thread-safe, and it counts evaluations in flight so a test can see them overlap.
    """

    def __init__(self, script: Callable[[str, int], EvalResult] | None = None,
                 delay: Callable[[int], float] | None = None):
        self.script = script or (lambda source, n: ok(1.0))
        self.delay = delay or (lambda n: 0.0)
        self.calls = 0
        self.in_flight = 0
        self.peak_in_flight = 0
        self.waiting = 0
        self.closed = False
        self._lock = threading.Lock()

    def evaluate(self, task_path, source, *, backend="triton", options=None, timeout_s=None) -> EvalResult:
        with self._lock:
            self.calls += 1
            n = self.calls
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            pause = self.delay(n)
            if pause:
                time.sleep(pause)
            return self.script(source, n)
        finally:
            with self._lock:
                self.in_flight -= 1

    def retime(self, task_path, baseline_source, candidate_source, *, backend="triton", options=None, rounds=3,
               timeout_s=None) -> RetimeReport:
        """Both kernels evaluated by the script (two calls): a deterministic machine re-times what it timed."""
        before, after = (self.evaluate(task_path, s, backend=backend, options=options)
                         for s in (baseline_source, candidate_source))
        if not (before.feasible and after.feasible and before.latency_ms and after.latency_ms):
            return RetimeReport.failed(after if before.feasible else before)
        b, c = before.latency_ms, after.latency_ms
        return RetimeReport(Verdict.OK, "scripted", b, c, b / c, ((b, c),) * rounds, after.latency_source, "scripted")

    def close(self) -> None:
        self.closed = True


def executor_handing_out(worker):
    """A stand-in for `backends.Executor` (patch it in) that records the arguments of each
    construction and hands out `worker`, which the caller's `with` leaves open, so a command
    runs on a warm worker. Returns the class and the list of recorded arguments."""
    made = []

    class Shared:
        def __init__(self, **kwargs):
            made.append(kwargs)

        def __enter__(self):
            return worker

        def __exit__(self, *exc):
            return None

    return Shared, made

