"""Running the steps of one outer iteration at once, and watching them.

Steps wait on the network (an LLM call) and on worker processes (compiles and
evaluations), not on this process's CPU, so threads are enough: the memory
store serialises its writes through its one connection, the executor pool
hands each evaluation to a free worker.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
from typing import Callable, Iterator, Sequence

from backends import ExecutorProtocol

from ._events import OnEvent, RunEvent, RunStats


class StepsInterrupted(Exception):
    """Raised inside a step that finishes after the run was interrupted: its result
    is not committed (a killed evaluation is no verdict on the candidate)."""


def run_all(fns: Sequence[Callable[[], None]], *, jobs: int, poll_s: float = 0.2) -> None:
    """Call every function, at most `jobs` at once, and return when all are done.

    The first exception a function raised is raised here after the others
    finished. The threads are daemons and the main thread waits in short
    polls, so Ctrl-C reaches it at once (the steps in flight are abandoned).
    """
    pending = list(fns)
    lock = threading.Lock()
    errors: list[BaseException] = []

    def worker() -> None:
        while True:
            with lock:
                if not pending or errors and isinstance(errors[0], KeyboardInterrupt):
                    return
                fn = pending.pop(0)
            try:
                fn()
            except BaseException as exc:  # carried to the caller
                with lock:
                    errors.append(exc)

    threads = [threading.Thread(target=worker, daemon=True, name=f"evokernel-step-{i}")
               for i in range(max(1, min(jobs, len(pending))))]
    for t in threads:
        t.start()
    for t in threads:
        while t.is_alive():
            t.join(poll_s)
    real = [e for e in errors if not isinstance(e, StepsInterrupted)]
    if real:
        raise real[0]


class RunMonitor:
    """What is in flight: steps proposing (for an LLM, calls waiting on the
    network), steps evaluating, evaluations queued for a worker, tokens and
    cost so far. Every event the run emits carries a snapshot as `stats`."""

    def __init__(self, on_event: OnEvent | None, executor: ExecutorProtocol | None = None):
        self._on_event = on_event
        self._executor = executor
        self._lock = threading.Lock()
        self._emit_lock = threading.Lock()
        self._proposing = 0
        self._evaluating = 0
        self._peak_proposing = 0
        self._tokens_in = 0
        self._tokens_out = 0
        self._cost_usd = 0.0
        self._started = time.monotonic()

    def stats(self) -> RunStats:
        queued = self._executor.waiting if self._executor is not None else 0
        with self._lock:
            return RunStats(
                proposing=self._proposing, evaluating=self._evaluating, queued=queued,
                peak_proposing=self._peak_proposing, tokens_in=self._tokens_in, tokens_out=self._tokens_out,
                cost_usd=self._cost_usd, elapsed_s=round(time.monotonic() - self._started, 3),
            )

    def emit(self, event: RunEvent) -> None:
        if self._on_event is None:
            return
        event = dataclasses.replace(event, stats=self.stats())
        with self._emit_lock:  # callbacks (progress views) need not be thread-safe
            self._on_event(event)

    @contextlib.contextmanager
    def proposing(self) -> Iterator[None]:
        with self._lock:
            self._proposing += 1
            self._peak_proposing = max(self._peak_proposing, self._proposing)
        try:
            yield
        finally:
            with self._lock:
                self._proposing -= 1

    @contextlib.contextmanager
    def evaluating(self) -> Iterator[None]:
        with self._lock:
            self._evaluating += 1
        try:
            yield
        finally:
            with self._lock:
                self._evaluating -= 1

    def add_usage(self, tokens_in: int, tokens_out: int, cost_usd: float | None) -> None:
        with self._lock:
            self._tokens_in += tokens_in or 0
            self._tokens_out += tokens_out or 0
            self._cost_usd += cost_usd or 0.0
