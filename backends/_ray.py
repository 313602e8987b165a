"""Evaluation as Ray tasks, so a cluster's GPUs serve one run (`--engine ray`).

Each Ray actor holds an `Executor` (so its worker process, CUDA context and
task modules stay warm between candidates, exactly as locally) and asks Ray
for one GPU, or one CPU where the cluster has none; Ray sets the actor's
CUDA_VISIBLE_DEVICES, which the executor's pinning honours. The driver sends
the task's source with each job, so the task file need not exist on the node
that evaluates it, and keeps the memory: no actor ever writes to it.

`ray.init()` is called without an address: Ray itself reads RAY_ADDRESS (a
cluster's head, e.g. `ray://head:10001`) and otherwise starts a local
instance. Needs `pip install 'evokernel[ray]'`.
"""

from __future__ import annotations

import hashlib
import os
import queue
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable, Sequence

from ._options import EvalOptions
from ._result import EvalResult
from ._retime import RetimeReport


class RayUnavailable(ImportError):
    pass


def _ray():
    try:
        import ray
    except ImportError as exc:
        raise RayUnavailable("--engine ray needs Ray: pip install 'evokernel[ray]'") from exc
    return ray


class _EvaluatorActor:
    """One executor on a Ray node (the class Ray makes into an actor)."""

    def __init__(self, device: str, executor_kwargs: dict[str, Any], env_overrides: dict[str, str]):
        from backends import Executor

        env = {**os.environ, **env_overrides} if env_overrides else None
        self.executor = Executor(device=device, env=env, **executor_kwargs)
        self.tasks_dir = Path(tempfile.mkdtemp(prefix="evokernel-ray-tasks-"))

    def _task_file(self, path: str, source: str) -> str:
        """The task file as the driver read it: the path itself when it holds that source here."""
        p = Path(path)
        try:
            if p.is_file() and p.read_text() == source:
                return path
        except OSError:
            pass
        digest = hashlib.sha256(source.encode()).hexdigest()[:16]
        local = self.tasks_dir / digest / p.name
        if not local.exists():
            local.parent.mkdir(parents=True, exist_ok=True)
            local.write_text(source)
        return str(local)

    def evaluate(self, task_path: str, task_source: str, source: str, backend: str, options: dict | None,
                 timeout_s: float | None) -> dict:
        result = self.executor.evaluate(self._task_file(task_path, task_source), source, backend=backend,
                                        options=EvalOptions.from_dict(options) if options else None, timeout_s=timeout_s)
        return result.to_dict()

    def retime(self, task_path: str, task_source: str, baseline_source: str, candidate_source: str, backend: str,
               options: dict | None, rounds: int, timeout_s: float | None) -> dict:
        report = self.executor.retime(self._task_file(task_path, task_source), baseline_source, candidate_source,
                                      backend=backend, options=EvalOptions.from_dict(options) if options else None,
                                      rounds=rounds, timeout_s=timeout_s)
        return report.to_dict()

    def node(self) -> str:
        import socket

        return socket.gethostname()

    def close(self) -> None:
        self.executor.close()


class RayPool:
    """The executor contract (`ExecutorProtocol`) over Ray actors: `evaluate` and `retime` from any thread.

    `devices` says what the driver planned ("cuda:N" entries, or "cpu" ones); on a
    cluster with GPUs there is one actor per GPU the cluster offers instead.
    `env_overrides` are set in each actor's environment on its node (the driver's own
    environment is not the node's, so it is never sent).
    """

    def __init__(self, devices: Sequence[str], *, env_overrides: dict[str, str] | None = None,
                 init_kwargs: dict[str, Any] | None = None, **executor_kwargs: Any):
        ray = _ray()
        if not ray.is_initialized():
            ray.init(**{"include_dashboard": False, "log_to_driver": False, **(init_kwargs or {})})
        self._ray = ray
        gpus = int(ray.cluster_resources().get("GPU", 0))
        remote = ray.remote(_EvaluatorActor)
        if gpus:
            plan = [remote.options(num_gpus=1, num_cpus=1).remote("cuda:0", executor_kwargs, env_overrides or {})
                    for _ in range(gpus)]
        else:
            plan = [remote.options(num_cpus=1).remote("cpu", executor_kwargs, env_overrides or {})
                    for _ in range(max(1, len(devices)))]
        self._actors = plan
        self.devices = tuple(["cuda:0"] * gpus if gpus else ["cpu"] * len(plan))
        self._free: queue.SimpleQueue[Any] = queue.SimpleQueue()
        for actor in plan:
            self._free.put(actor)
        self._lock = threading.Lock()
        self._waiting = 0
        self.evaluations = 0

    @property
    def waiting(self) -> int:
        return self._waiting

    def nodes(self) -> list[str]:
        return self._ray.get([a.node.remote() for a in self._actors])

    def evaluate(self, task_path: str | Path, source: str, *, backend: str = "triton",
                 options: EvalOptions | None = None, timeout_s: float | None = None) -> EvalResult:
        reply = self._on_free_actor(lambda actor: actor.evaluate.remote(
            str(task_path), Path(task_path).read_text(), source, backend, options.to_dict() if options else None,
            timeout_s))
        return EvalResult.from_dict(reply)

    def retime(self, task_path: str | Path, baseline_source: str, candidate_source: str, *, backend: str = "triton",
               options: EvalOptions | None = None, rounds: int = 3, timeout_s: float | None = None) -> RetimeReport:
        """`Executor.retime` on a free actor: both kernels alternate in that actor's one worker."""
        reply = self._on_free_actor(lambda actor: actor.retime.remote(
            str(task_path), Path(task_path).read_text(), baseline_source, candidate_source, backend,
            options.to_dict() if options else None, rounds, timeout_s))
        return RetimeReport.from_dict(reply)

    def _on_free_actor(self, call: Callable[[Any], Any]) -> Any:
        """`call(actor)`'s reply on a free actor, waiting while all are busy."""
        with self._lock:
            self._waiting += 1
        actor = self._free.get()
        with self._lock:
            self._waiting -= 1
        try:
            reply = self._ray.get(call(actor))
        finally:
            self._free.put(actor)
        with self._lock:
            self.evaluations += 1
        return reply

    def close(self) -> None:
        for actor in self._actors:
            try:
                self._ray.get(actor.close.remote(), timeout=30)
                self._ray.kill(actor)
            except Exception:  # an actor already gone has nothing left to close
                pass
        self._actors = []
