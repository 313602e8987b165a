"""`run`: the one library entry point for a run of the loop.

    from evokernel import RunOptions, run
    result = run(["softmax"], RunOptions.of(budget=4), memory="memory.db")

Everything is checked before the memory file is touched (options, tasks,
backend, devices, the policy and its key), so a run that cannot start raises
`RunError` and leaves no file behind. `evokernel run`, `refine`, `bench` and
`ablate` are this call plus rendering.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any, Iterator, Sequence

from backends import ExecutorProtocol
from evokernel._step import FEASIBLE_STATUSES

from ._events import OnEvent
from ._options import LoopOptions, RunError, RunOptions, default_jobs
from ._types import RunResult, TaskOutcome


def run(
    tasks: Sequence[str | os.PathLike[str]] = (),
    options: RunOptions = RunOptions(),
    *,
    policy: Any = None,
    executor: ExecutorProtocol | None = None,
    memory: str | os.PathLike[str] | None = None,
    store: Any = None,
    on_event: OnEvent | None = None,
    skip_broken: bool = False,
) -> RunResult:
    """Run the loop over task files (or bundled task names; none: the bundled examples).

    `memory` is the bank's path (default: `memory_store.default_memory_path()`),
    or pass an open `store`. `policy` overrides the one `options` names;
    `executor` anything that meets `backends.ExecutorProtocol` (default: a pool the options plan,
    closed at the end); `on_event` hears the run's typed events (evokernel.loop: `RunStarted`,
    `StepDone`, ...). A matching unfinished run in the memory is resumed unless `options.execution.resume`
    is False. With `skip_broken`, a task file that does not load is reported as
    a task not solved instead of stopping the run (benchmarks count it).
    Raises `RunError` when the run cannot start.
    """
    from backends import backend_names

    from ._tasks import resolve_task_args

    options = options.resolved()
    device, size = options.execution.run_device(), options.evaluation.size
    known = backend_names()
    for name in (options.backend, *options.loop.port_from):
        if name not in known:
            raise RunError(f"unknown backend {name!r}; known: {', '.join(known)}")
    try:
        paths = resolve_task_args([os.fspath(t) for t in tasks])
    except KeyError as exc:
        raise RunError(str(exc.args[0])) from None
    loaded, broken = load_tasks(paths, size, precision=options.evaluation.precision, skip_broken=skip_broken)
    export = options.execution.export
    if export and Path(export).exists() and not Path(export).is_dir():
        raise RunError(f"--export {export} is a file; give a directory for the tasks' best kernels")
    devices = _plan(options, executor)
    notes = []
    if options.execution.workers_per_gpu > 1 and devices and not any(d.startswith("cuda") for d in devices):
        notes.append(f"--workers-per-gpu {options.execution.workers_per_gpu} has no GPU to share here: "
                     "the run evaluates on the CPU, in --jobs workers")
    with _memory(memory, store) as bank:
        if policy is None:
            policy = make_policy(options, bank)
        jobs = options.execution.jobs or default_jobs(policy.is_llm, len(loaded), n_gpus=sum(d.startswith("cuda") for d in devices or ()))
        owned = executor is None
        if owned:
            try:
                executor = make_executor(options, devices, jobs)
            except ImportError as exc:  # --engine ray without Ray installed
                raise RunError(str(exc)) from None
        try:
            if loaded:
                from ._loop import Runner

                runner = Runner([t for t, _ in loaded], [k for _, k in loaded], policy, bank, options, device=device,
                                size=size, executor=executor, jobs=jobs, on_event=on_event)
                result = runner.run()
            else:
                result = RunResult(0, policy.name, policy.is_llm, options, [], memory_path=str(bank.path), size=size,
                                   device=device, jobs=jobs)
        finally:
            if owned:
                executor.close()
        if broken:  # the loop's accuracy counts the tasks it ran; the result counts them all
            scale = len(result.tasks) / (len(result.tasks) + len(broken))
            result.accuracy_by_iteration = [a * scale for a in result.accuracy_by_iteration]
            result.tasks = [*result.tasks, *broken]
        if export:
            from ._loop import export_best

            result.exported = [str(p) for p in export_best(bank, result, export)]
    result.notes = [*result.notes, *notes]
    return result


def refine(
    options: RunOptions = RunOptions(loop=LoopOptions(budget=10)),
    *,
    memory: str | os.PathLike[str] | None = None,
    policy: Any = None,
    executor: ExecutorProtocol | None = None,
    on_event: OnEvent | None = None,
) -> RunResult:
    """Refine every task in the memory that already has a feasible kernel of `options.backend`
    at the run's size and precision (a task's key holds both: a kernel at another is not one to
    refine here).

    A task file that moved or changed is rebuilt from the source its run recorded,
    beside the memory (`refine-tasks/`); `result.notes` says which.
    """
    from memory_store import MemoryStore, MemoryStoreError, default_memory_path

    from ._tasks import tasks_in_bank

    path = Path(memory) if memory is not None else default_memory_path()
    if not path.is_file():
        raise RunError(f"no memory at {path}")
    options = options.resolved()
    size, precision = options.evaluation.size, options.evaluation.precision
    try:
        with MemoryStore(path) as bank:
            found, notes = tasks_in_bank(bank, options.backend, path.parent / "refine-tasks")
            loaded, _ = load_tasks(found, size, precision=precision, skip_broken=True)
            paths = list(dict.fromkeys(task.path for task, key in loaded
                                       if bank.feasible_items(key, options.backend, statuses=FEASIBLE_STATUSES)))
    except MemoryStoreError as exc:
        raise RunError(str(exc)) from None
    if not paths:
        raise RunError(f"no task in {path} has a feasible {options.backend} kernel at size {size} and precision "
                       f"{precision} to refine")
    result = run(paths, options, policy=policy, executor=executor, memory=path, on_event=on_event)
    result.notes = [*notes, *result.notes]
    return result


# --- the pieces, checked before anything is written ----------------------------


def _load_task(path: Path, size: str, precision: str, *, run_reference: bool) -> tuple[Any, str]:
    """The task at its size and precision, and its key in the memory (the size is part of
    it when not full, the precision when not fp32)."""
    from backends import load_task

    task = load_task(path, size=size, precision=precision, run_reference=run_reference)
    return task, task.key


def load_tasks(paths: Sequence[Path], size: str, *, precision: str = "fp32",
               skip_broken: bool = False) -> tuple[list[tuple[Any, str]], list[TaskOutcome]]:
    """Loaded tasks with their keys, and (with `skip_broken`) an outcome saying why for
    each file that did not load. At full size the reference is not run here (its
    inputs may not fit this host); a failing one is then the executor's task_error."""
    from backends import TaskError

    loaded, broken = [], []
    for p in paths:
        try:
            loaded.append(_load_task(Path(p), size, precision, run_reference=size != "full"))
        except TaskError as exc:
            if not skip_broken:
                raise RunError(str(exc)) from None
            broken.append(TaskOutcome(name=Path(p).stem, task_key="", path=str(p), stopped=f"task did not load: {exc.problem}",
                                      last_status="task_error", last_message=exc.problem))
    return loaded, broken


def _plan(options: RunOptions, executor: ExecutorProtocol | None) -> list[str] | None:
    if executor is not None:
        return None
    from backends import DevicePlanError, plan_devices

    try:
        return plan_devices(device=options.execution.device, gpus=options.execution.gpus,
                            cpu_workers=options.execution.jobs or 1, workers_per_gpu=options.execution.workers_per_gpu)
    except DevicePlanError as exc:
        raise RunError(str(exc)) from None


def make_policy(options: RunOptions, store: Any) -> Any:
    """The policy `options` names, logging to `store`; RunError when it cannot be made
    (unknown policy or provider, missing key, missing SDK)."""
    from evokernel.llm import LLMError
    from evokernel.policies import get_policy

    try:
        # Independent samples are fresh LLM drafts: the deterministic builtin would write one kernel k times.
        return get_policy(model=options.model, policy=options.policy, log=store, replay=options.execution.replay,
                          llm=options.llm, hardware=_hardware(options, store) if options.model else None,
                          builtin_first=options.loop.builtin_first and not options.loop.independent_samples)
    except (ValueError, ImportError, LLMError) as exc:
        raise RunError(str(exc)) from None


def _hardware(options: RunOptions, store: Any) -> Any:
    """The GPU's measured facts for the LLM's prompts (measured once, cached beside the memory);
    None off a GPU, where latencies are not speed."""
    from backends import hardware_facts

    device = options.execution.run_device()
    if not device.startswith("cuda"):
        return None
    return hardware_facts(device, cache_path=Path(store.path).parent / "hardware.json")


def make_executor(options: RunOptions, devices: Sequence[str], jobs: int) -> ExecutorProtocol:
    """Workers for this run: one per GPU, or `jobs` on a CPU (each compiles and runs one
    candidate at a time); Ray tasks with `engine="ray"`."""
    from backends import ExecutorPool

    if devices and devices[0] == "cpu":
        devices = ["cpu"] * max(1, min(jobs, os.cpu_count() or 1))
    kwargs: dict[str, Any] = dict(timeout_s=options.evaluation.timeout_s,
                                  max_jobs_per_worker=options.execution.max_jobs_per_worker)
    if options.execution.engine == "ray":
        from backends import RayPool

        if options.execution.workers_per_gpu > 1:
            raise RunError("--workers-per-gpu is for the local engine; Ray places its tasks on GPUs itself")

        return RayPool(devices, **kwargs)
    return ExecutorPool(devices, **kwargs)


@contextlib.contextmanager
def _memory(path: str | os.PathLike[str] | None, store: Any) -> Iterator[Any]:
    """The store a run writes to. A file this call created is removed again if the run
    fails before its first step (a bad key, an unknown provider)."""
    if store is not None:
        yield store
        return
    from memory_store import MemoryStore, MemoryStoreError, default_memory_path

    target = Path(path).expanduser() if path is not None else default_memory_path()
    created = [p for p in (target, *target.parents) if not p.exists()]
    try:
        bank = MemoryStore(target)
    except MemoryStoreError as exc:
        _remove(created)
        raise RunError(str(exc)) from None
    except OSError as exc:  # a folder on the way is a file, or cannot be made
        _remove(created)
        raise RunError(f"cannot open a memory at {target}: {exc.strerror or exc}") from None
    started = False
    try:
        with bank:
            n_runs = len(bank.runs())
            try:
                yield bank
            finally:
                started = len(bank.runs()) > n_runs
    finally:
        if not started:
            _remove(created)


def _remove(created: list[Path]) -> None:
    """Remove what opening the memory created: the file, its WAL companions, new folders."""
    for p in created:
        for f in (p, Path(f"{p}-wal"), Path(f"{p}-shm")):
            with contextlib.suppress(OSError):
                f.unlink() if f.is_file() else f.rmdir()
