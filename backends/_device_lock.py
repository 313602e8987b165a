"""Several workers on one GPU (`ExecutorPool(..., workers_per_gpu=N)`): their evaluations share the
device, their timings own it.

A worker holds the device's lock shared while it builds models, draws inputs, compiles and checks a
candidate (mostly CPU work: Triton's compiles, model set-up), and exclusively while it times anything
(the baselines, the candidate, the kernel profile, a re-timing): then no other worker of that GPU runs
anything, so no timing overlaps another evaluation's GPU work, as with one worker a GPU.

Two lock files (fcntl.flock): the device lock itself, and a turnstile that a worker waiting to time
holds while it waits, which every worker passes before taking the device lock shared, so a waiting
timing goes before evaluations that start after it asked. No worker waits at the turnstile while it
holds the device lock (that order could deadlock), and the OS drops a dead worker's locks with its
files, so a killed worker (a timeout) never leaves the device locked.

An evaluation that ran out of memory beside the others (each keeps to 1/N of the memory) is run again
with the GPU to itself (`alone()`): a second pair of lock files, held shared by every evaluation from
its start to its end (timing included) and exclusively by such a re-run, waits until no other
evaluation is in flight, so no other worker holds live tensors; new evaluations wait at its own
turnstile. A worker waiting there holds nothing, and one in an evaluation never needs that
turnstile, so the two pairs cannot deadlock. (Measured on an H100: with 2 workers, 22 of
KernelBench level1's 100 tasks, those whose inputs take several GiB, ran out of memory in their half.)
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import os
import time
from pathlib import Path
from typing import Callable, ContextManager, Iterator

__all__ = ["DeviceShare", "DeviceLock", "alone_for_timing", "set_timing_guard"]

_timing_guard: Callable[[], ContextManager[None]] | None = None


def set_timing_guard(guard: Callable[[], ContextManager[None]] | None) -> None:
    """What `alone_for_timing()` enters (the evaluation sets it; None: nothing)."""
    global _timing_guard
    _timing_guard = guard


def alone_for_timing() -> ContextManager[None]:
    """For a backend that times kernels inside a candidate's call (Triton's autotuner picking a
    configuration): the GPU to this worker alone while other workers share it, as for the
    evaluation's own timings; nothing where the worker has its GPU to itself."""
    return _timing_guard() if _timing_guard is not None else contextlib.nullcontext()


@dataclasses.dataclass(frozen=True)
class DeviceShare:
    """One GPU shared by `workers` workers, coordinated through the lock files at `path` (and
    `path` + ".turnstile", ".evaluations", ".evaluations.turnstile"); each worker may use 1 / `workers`
    of the device's memory."""

    path: str
    workers: int

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ValueError(f"a device share needs at least one worker, got {self.workers}")


class DeviceLock:
    """A worker's side of a `DeviceShare`: `shared()` for an evaluation, `exclusive()` inside it for
    timing, `alone()` for an evaluation run again with the GPU to itself. `on_wait(True)` / `on_wait(False)` are called around every wait that may block, so the
    parent can leave the waits out of the evaluation's timeout."""

    def __init__(self, path: str | os.PathLike[str], on_wait: Callable[[bool], None] | None = None):
        self.path = Path(path)
        self._device = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        self._turnstile = os.open(f"{self.path}.turnstile", os.O_RDWR | os.O_CREAT, 0o600)
        self._evaluations = os.open(f"{self.path}.evaluations", os.O_RDWR | os.O_CREAT, 0o600)
        self._evaluations_turnstile = os.open(f"{self.path}.evaluations.turnstile", os.O_RDWR | os.O_CREAT, 0o600)
        self.on_wait = on_wait
        self.waited_s = 0.0  # seconds spent waiting for the device, over this lock's life
        self._shared = False
        self._exclusive = False

    def close(self) -> None:
        """Closing the files drops whatever this lock holds."""
        for fd in (self._device, self._turnstile, self._evaluations, self._evaluations_turnstile):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._device = self._turnstile = self._evaluations = self._evaluations_turnstile = -1

    def __del__(self) -> None:
        if getattr(self, "_device", -1) >= 0:
            self.close()

    def _take(self, fd: int, mode: int) -> None:
        try:  # no wait, nothing to tell the parent
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            pass
        t0 = time.monotonic()
        if self.on_wait:
            self.on_wait(True)
        try:
            fcntl.flock(fd, mode)
        finally:
            self.waited_s += time.monotonic() - t0
            if self.on_wait:
                self.on_wait(False)

    def _enter_shared(self) -> None:
        self._pass(self._turnstile)  # behind any worker waiting to time
        self._take(self._device, fcntl.LOCK_SH)
        self._shared = True

    def _leave(self) -> None:
        fcntl.flock(self._device, fcntl.LOCK_UN)
        self._shared = False

    def _pass(self, turnstile: int) -> None:
        self._take(turnstile, fcntl.LOCK_EX)
        fcntl.flock(turnstile, fcntl.LOCK_UN)

    @contextlib.contextmanager
    def shared(self) -> Iterator[None]:
        """An evaluation's hold: the device shared, and the evaluations' lock shared for all of it."""
        self._pass(self._evaluations_turnstile)  # behind any worker waiting for the GPU to itself
        self._take(self._evaluations, fcntl.LOCK_SH)
        try:
            self._enter_shared()
            try:
                yield
            finally:
                if self._shared:
                    self._leave()
        finally:
            fcntl.flock(self._evaluations, fcntl.LOCK_UN)

    @contextlib.contextmanager
    def alone(self) -> Iterator[None]:
        """The GPU to this worker with no other evaluation in flight (not inside `shared()`): for an
        evaluation to run again with all of the memory."""
        if self._shared:
            raise RuntimeError("alone() inside shared() would wait for itself")
        self._take(self._evaluations_turnstile, fcntl.LOCK_EX)
        try:
            self._take(self._evaluations, fcntl.LOCK_EX)
            try:
                with self.exclusive():  # a worker's timing-only job takes no evaluation lock
                    yield
            finally:
                fcntl.flock(self._evaluations, fcntl.LOCK_UN)
        finally:
            fcntl.flock(self._evaluations_turnstile, fcntl.LOCK_UN)

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        """The device to this worker alone; inside `shared()`, its shared hold is given up for the time
        and taken again after (other workers may run in between)."""
        if self._exclusive:  # already alone (an autotuner timing inside the evaluation's timing)
            yield
            return
        was_shared = self._shared
        if was_shared:
            self._leave()  # never wait at the turnstile holding the device
        self._take(self._turnstile, fcntl.LOCK_EX)
        try:
            self._take(self._device, fcntl.LOCK_EX)
            self._exclusive = True
            try:
                yield
            finally:
                self._exclusive = False
                fcntl.flock(self._device, fcntl.LOCK_UN)
        finally:
            fcntl.flock(self._turnstile, fcntl.LOCK_UN)
            if was_shared:
                self._enter_shared()
