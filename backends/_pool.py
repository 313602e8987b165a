"""Several workers at once: one per GPU, or several on a CPU.

`ExecutorPool` hands each evaluation to a free `Executor` (each keeps one
worker process, reused and retired as `Executor` decides) and blocks while
all are busy, so callers in many threads share a fixed set of workers. On GPUs
there is one worker per device by default, so no two timings ever overlap on a device;
on a CPU, compiles and interpreted runs of different candidates go in parallel.
A device named more than once gets that many workers, which share it through a lock
(backends/_device_lock.py): their compiles and checks overlap, and each timing has the
device to itself, as with one worker.

`plan_devices` decides which devices get workers, from the options and the
GPUs visible to this process (CUDA_VISIBLE_DEVICES is honoured by torch, and
each worker is pinned to its physical device, see `Executor`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import queue
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from ._contract import ExecutorProtocol
from ._device_lock import DeviceShare
from ._executor import Executor
from ._options import EvalOptions
from ._result import EvalResult
from ._retime import RetimeReport


class DevicePlanError(ValueError):
    """Devices asked for that this machine does not have."""


def visible_gpu_count() -> int:
    try:
        import torch

        return torch.cuda.device_count() if torch.cuda.is_available() else 0
    except Exception:  # a broken driver means no GPU to plan for
        return 0


def plan_devices(*, device: str | None, gpus: Sequence[int] | None, cpu_workers: int,
                 visible_gpus: int | None = None, workers_per_gpu: int = 1) -> list[str]:
    """One entry per worker: `cuda:N` `workers_per_gpu` times per chosen GPU, or `cpu` `cpu_workers` times.

    `gpus` picks GPUs by index among the visible ones; otherwise `device`
    picks one (`cuda:1`, `cpu`); with neither, every visible GPU gets its workers,
    and a machine without one gets `cpu_workers` CPU workers.
    """
    if workers_per_gpu < 1:
        raise DevicePlanError(f"--workers-per-gpu must be at least 1, got {workers_per_gpu}")
    return [d for d in _plan_devices(device, gpus, cpu_workers, visible_gpus)
            for _ in range(workers_per_gpu if d.startswith("cuda") else 1)]


def _plan_devices(device: str | None, gpus: Sequence[int] | None, cpu_workers: int,
                  visible_gpus: int | None) -> list[str]:
    n = visible_gpu_count() if visible_gpus is None else visible_gpus
    if gpus is not None:
        bad = [g for g in gpus if not 0 <= g < n]
        if bad:
            raise DevicePlanError(f"--gpus {','.join(map(str, gpus))}: {n} GPU(s) visible here (indices 0..{n - 1})"
                                  if n else f"--gpus {','.join(map(str, gpus))}: no GPU is visible here")
        if device is not None and device.startswith("cpu"):
            raise DevicePlanError("--gpus and --device cpu contradict each other")
        return [f"cuda:{g}" for g in dict.fromkeys(gpus)]
    if device is not None:
        if device.startswith("cuda"):
            index = int(device.partition(":")[2] or 0)
            if index >= n:
                raise DevicePlanError(f"{device}: {n} GPU(s) visible here")
            return [f"cuda:{index}"]
        return [device] * max(1, cpu_workers)
    if n:
        return [f"cuda:{i}" for i in range(n)]
    return ["cpu"] * max(1, cpu_workers)


@dataclasses.dataclass(frozen=True)
class PoolStats:
    workers: int
    busy: int
    waiting: int  # evaluations queued for a free worker
    evaluations: int
    devices: tuple[str, ...]
    retired_for_memory: int = 0


@dataclasses.dataclass
class MemoryWatch:
    """Retires a GPU worker whose memory keeps growing (long-lived workers leak: a
    candidate's module-level cache, a fragmented allocator), judged from the free
    memory each result's plan recorded: more than `max_growth_bytes` lost since the
    worker started, or a loss of at least `min_step_bytes` on `growth_jobs` jobs in a row."""

    max_growth_bytes: int = 2 << 30
    growth_jobs: int = 8
    min_step_bytes: int = 16 << 20
    _first: dict[int, int] = dataclasses.field(default_factory=dict)
    _last: dict[int, int] = dataclasses.field(default_factory=dict)
    _streak: dict[int, int] = dataclasses.field(default_factory=dict)

    def observe(self, worker: int, result: EvalResult) -> bool:
        """Whether the worker that produced `result` should be retired now."""
        plan = getattr(result, "memory", None)
        if plan is None or not str(result.device).startswith("cuda"):
            return False
        free = int(plan.available_bytes)
        if not result.worker_reused or worker not in self._first:
            self._first[worker], self._last[worker], self._streak[worker] = free, free, 0
            return False
        shrank = self._last[worker] - free >= self.min_step_bytes
        self._streak[worker] = self._streak[worker] + 1 if shrank else 0
        self._last[worker] = free
        if self._first[worker] - free > self.max_growth_bytes or self._streak[worker] >= self.growth_jobs:
            del self._first[worker]
            return True
        return False


class ExecutorPool:
    """Evaluate candidates on a fixed set of executors, from any number of threads.

    >>> with ExecutorPool(["cuda:0", "cuda:1"]) as pool:      # doctest: +SKIP
    ...     result = pool.evaluate("task.py", source, backend="triton")
    """

    def __init__(self, devices: Sequence[str], *, memory_watch: MemoryWatch | None = None,
                 executor_factory: Callable[..., ExecutorProtocol] = Executor, **executor_kwargs: Any):
        if not devices:
            raise DevicePlanError("an executor pool needs at least one device")
        self.devices = tuple(devices)
        # a GPU named more than once is shared by that many workers, through a lock file of its own
        self._lock_dir: str | None = None
        shares: dict[str, DeviceShare] = {}
        for d in dict.fromkeys(self.devices):
            if d.startswith("cuda") and self.devices.count(d) > 1:
                self._lock_dir = self._lock_dir or tempfile.mkdtemp(prefix="evokernel-devices-")
                shares[d] = DeviceShare(str(Path(self._lock_dir) / f"{d.replace(':', '')}.lock"), self.devices.count(d))
        self._executors = [executor_factory(device=d, **executor_kwargs, **({"device_share": shares[d]} if d in shares else {}))
                           for d in self.devices]
        self.memory_watch = memory_watch or MemoryWatch()
        self._retired_for_memory = 0
        self._free: queue.SimpleQueue[ExecutorProtocol] = queue.SimpleQueue()
        for ex in self._executors:
            self._free.put(ex)
        self._lock = threading.Lock()
        self._busy = 0
        self._waiting = 0
        self._done = 0
        self._closed = False

    def __enter__(self) -> "ExecutorPool":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def waiting(self) -> int:
        return self._waiting

    def stats(self) -> PoolStats:
        with self._lock:
            return PoolStats(len(self._executors), self._busy, self._waiting, self._done, self.devices,
                             self._retired_for_memory)

    @property
    def workers_started(self) -> int:
        return sum(getattr(ex, "workers_started", 0) for ex in self._executors)

    def evaluate(self, task_path: str | Path, source: str, *, backend: str = "triton",
                 options: EvalOptions | None = None, timeout_s: float | None = None) -> EvalResult:
        with self._borrow() as ex:
            result = ex.evaluate(task_path, source, backend=backend, options=options, timeout_s=timeout_s)
            self._watch(ex, result)
            return result

    def retime(self, task_path: str | Path, baseline_source: str, candidate_source: str, *, backend: str = "triton",
               options: EvalOptions | None = None, rounds: int = 3, timeout_s: float | None = None) -> RetimeReport:
        """`Executor.retime` on a free worker: both kernels alternate in that one worker."""
        with self._borrow() as ex:
            return ex.retime(task_path, baseline_source, candidate_source, backend=backend, options=options,
                             rounds=rounds, timeout_s=timeout_s)

    @contextlib.contextmanager
    def _borrow(self) -> Iterator[ExecutorProtocol]:
        """A free executor for one job, waiting while all are busy."""
        with self._lock:
            self._waiting += 1
        ex = self._free.get()
        with self._lock:
            self._waiting -= 1
            self._busy += 1
        try:
            yield ex
        finally:
            with self._lock:
                self._busy -= 1
                self._done += 1
            self._free.put(ex)

    def _watch(self, ex: ExecutorProtocol, result: EvalResult) -> None:
        if self.memory_watch.observe(id(ex), result):
            ex.close()  # its next job starts a fresh worker
            result.warnings.append("the worker was retired after this candidate: its GPU memory kept growing")
            with self._lock:
                self._retired_for_memory += 1

    def close(self) -> None:
        """Stop every worker (a worker in the middle of a candidate is killed)."""
        self._closed = True
        for ex in self._executors:
            ex.close()
        if self._lock_dir is not None:
            shutil.rmtree(self._lock_dir, ignore_errors=True)
