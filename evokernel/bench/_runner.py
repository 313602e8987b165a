"""Run the loop over a benchmark suite and record the numbers with the
conditions they were measured under.

    result = run_bench("level1", BenchOptions(budget=2, limit=4))
    result.metrics["correct_rate"], result.to_dict()

A suite is a bundled name (`level1`, `level2`, `level3`, `npu`, found in the
checkout's `benchmarks/` folder), a directory of task files or one task file.
By default each run starts from a fresh temporary memory, so its numbers do
not depend on what an earlier run taught the memory; `BenchOptions.memory`
names a memory to use (and grow) instead.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
import os
import platform
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from ._metrics import compute_metrics, task_row

BUNDLED_SUITES = ("level1", "level2", "level3", "npu")
RESULT_KIND = "evokernel-bench"
RESULT_VERSION = 1

Event = dict[str, Any]


class BenchError(ValueError):
    """A benchmark that cannot start: a bad suite, policy or option (the CLI's exit 2)."""


class SuiteError(BenchError):
    """A suite name or path that does not lead to task files."""


def benchmarks_root() -> Path:
    """The checkout's `benchmarks/` folder, beside the installed `evokernel` package."""
    import evokernel

    return Path(evokernel.__file__).resolve().parent.parent / "benchmarks"


def resolve_tasks(source: str | os.PathLike[str], *, limit: int | None = None) -> list[Path]:
    """Task files for a suite name, a directory or a single file; the first `limit` in sorted order."""
    if limit is not None and limit < 1:
        raise SuiteError(f"--limit must be at least 1, got {limit}")
    text = os.fspath(source)
    path = Path(text)
    if text in BUNDLED_SUITES and not path.exists():
        path = benchmarks_root() / text
        if not path.is_dir():
            raise SuiteError(
                f"the bundled suite {text!r} is not here: {path} does not exist. The suites ship with a "
                "checkout of the repository (pip install -e .), not with a wheel; pass a directory of task files instead."
            )
    elif not path.exists():
        raise SuiteError(f"{text!r} is neither a bundled suite ({', '.join(BUNDLED_SUITES)}) nor an existing file or directory")
    if path.is_file():
        files = [path]
    else:
        files = sorted(f for f in path.glob("*.py") if not f.name.startswith("_"))
        if not files:
            raise SuiteError(f"{path} holds no task files (*.py)")
    return files[:limit] if limit else files


@dataclasses.dataclass(frozen=True)
class BenchOptions:
    """Everything that shapes a benchmark run; recorded in its result."""

    policy: str = "builtin"
    model: str | None = None  # PROVIDER:MODEL; overrides `policy`
    backend: str = "triton"
    budget: int = 30
    limit: int | None = None
    memory: str | None = None  # None: a fresh temporary memory
    memory_mode: str = "value"
    n_memories: int = 5
    seed: int = 0
    device: str | None = None
    timeout_s: float = 300.0
    trials: int = 5
    reps: int = 100
    baselines: bool = True

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def validate(self) -> None:
        """Raise BenchError for options the loop would reject, before any work starts."""
        from evokernel.loop import MEMORY_MODES

        if self.budget < 1:
            raise BenchError(f"budget must be at least 1 step per task, got {self.budget}")
        if self.limit is not None and self.limit < 1:
            raise BenchError(f"limit must be at least 1, got {self.limit}")
        if self.memory_mode not in MEMORY_MODES:
            raise BenchError(f"memory mode must be one of {', '.join(MEMORY_MODES)}, got {self.memory_mode!r}")
        if self.model is None and self.policy != "builtin":
            raise BenchError(f"unknown policy {self.policy!r}: use --policy builtin or --model PROVIDER:MODEL")

    def run_config(self, device: str, **changes: Any):
        from evokernel.loop import RunConfig

        config = RunConfig(
            backend=self.backend, budget=self.budget, memory_mode=self.memory_mode, n_memories=self.n_memories,
            seed=self.seed, device=device, timeout_s=self.timeout_s, trials=self.trials, reps=self.reps,
            baselines=self.baselines,
        )
        return dataclasses.replace(config, **changes) if changes else config


@dataclasses.dataclass
class BenchResult:
    suite: str
    metrics: dict[str, Any]
    tasks: list[dict[str, Any]]
    environment: dict[str, Any]
    options: dict[str, Any]
    policy: str
    policy_is_llm: bool
    accuracy_by_iteration: list[float]
    run_id: int | None = None
    memory: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": RESULT_KIND,
            "version": RESULT_VERSION,
            "suite": self.suite,
            "policy": self.policy,
            "policy_is_llm": self.policy_is_llm,
            "metrics": self.metrics,
            "accuracy_by_iteration": self.accuracy_by_iteration,
            "tasks": self.tasks,
            "environment": self.environment,
            "options": self.options,
            "run_id": self.run_id,
            "memory": self.memory,
        }


# --- pieces shared with the ablation ------------------------------------------


def resolve_device(device: str | None) -> str:
    from backends import default_device

    return device or default_device()


def load_tasks(paths: Sequence[Path]) -> tuple[list[Any], list[Any]]:
    """Loaded tasks, and an outcome saying why for each file that did not load
    (it stays in the denominator: a broken task is a task not solved)."""
    from backends import TaskError, load_task
    from evokernel.loop import TaskOutcome

    tasks, broken = [], []
    for p in paths:
        try:
            tasks.append(load_task(p))
        except TaskError as exc:
            broken.append(TaskOutcome(name=Path(p).stem, task_key="", path=str(p), stopped=f"task did not load: {exc.problem}"))
    return tasks, broken


@contextlib.contextmanager
def open_memory(path: str | os.PathLike[str] | None, *, copy_from: str | os.PathLike[str] | None = None) -> Iterator[Any]:
    """The store a run writes to: `path` itself, or a fresh temporary one
    (started as a copy of `copy_from` when given), removed afterwards."""
    from memory_store import MemoryStore

    if path is not None:
        store = MemoryStore(path)
        try:
            yield store
        finally:
            store.close()
        return
    with tempfile.TemporaryDirectory(prefix="evokernel-bench-") as tmp:
        db = Path(tmp) / "memory.db"
        if copy_from is not None:
            _copy_sqlite(Path(copy_from), db)
        store = MemoryStore(db)
        try:
            yield store
        finally:
            store.close()


def _copy_sqlite(src: Path, dst: Path) -> None:
    """A consistent copy even while another process writes (WAL): SQLite's backup API."""
    if not src.is_file():
        raise SuiteError(f"no memory at {src}")
    with contextlib.closing(sqlite3.connect(str(src))) as a, contextlib.closing(sqlite3.connect(str(dst))) as b:
        a.backup(b)


def execute(tasks: Sequence[Any], broken: Sequence[Any], policy: Any, store: Any, config: Any, *,
            executor: Any = None, on_event: Callable[[Event], None] | None = None, resume: bool = True):
    """Run the loop over loaded tasks; the outcomes of unloadable ones are appended."""
    from evokernel.loop import RunResult, Runner

    if tasks:
        run = Runner(tasks, policy, store, config, executor=executor, on_event=on_event, resume=resume).run()
    else:
        run = RunResult(0, policy.name, policy.is_llm, config, [], memory_path=str(store.path))
    if broken:  # the loop's accuracy counts the tasks it ran; the suite's counts them all
        scale = len(run.tasks) / (len(run.tasks) + len(broken))
        run.accuracy_by_iteration = [a * scale for a in run.accuracy_by_iteration]
    run.tasks = [*run.tasks, *broken]
    return run


def make_policy(options: BenchOptions, store: Any) -> Any:
    """The policy `options` names, logging to `store`; BenchError when it cannot be made."""
    from evokernel.llm import LLMError
    from evokernel.policies import get_policy

    try:
        return get_policy(model=options.model, policy=options.policy, log=store)
    except (ValueError, ImportError, LLMError) as exc:
        raise BenchError(str(exc)) from exc


def run_bench(
    source: str | os.PathLike[str],
    options: BenchOptions = BenchOptions(),
    *,
    policy: Any = None,
    executor: Any = None,
    on_event: Callable[[Event], None] | None = None,
    command: str | None = None,
) -> BenchResult:
    """Run `options.budget` steps on each task of a suite and compute its metrics.

    `policy` overrides `options.policy`/`options.model` (tests, wrappers);
    `command` is recorded as the command line (default: this process's argv).
    Raises BenchError (SuiteError for the suite) before any work when it cannot start.
    """
    options.validate()
    paths = resolve_tasks(source, limit=options.limit)
    device = resolve_device(options.device)
    config = options.run_config(device)
    tasks, broken = load_tasks(paths)
    with open_memory(options.memory) as store:
        pol = policy or make_policy(options, store)
        run = execute(tasks, broken, pol, store, config, executor=executor, on_event=on_event)
    return BenchResult(
        suite=os.fspath(source),
        metrics=compute_metrics(run.tasks, device=device, is_llm=run.policy_is_llm),
        tasks=[task_row(o) for o in run.tasks],
        environment=environment(device, options, tasks, command=command),
        options=options.to_dict(),
        policy=run.policy,
        policy_is_llm=run.policy_is_llm,
        accuracy_by_iteration=list(run.accuracy_by_iteration),
        run_id=run.run_id or None,
        memory=str(Path(options.memory).resolve()) if options.memory else "fresh temporary memory",
    )


# --- the conditions the numbers were measured under ----------------------------


def _version(dist: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _device_name(device: str) -> str:
    if device.startswith("cuda"):
        try:
            import torch

            return torch.cuda.get_device_name(torch.device(device))
        except Exception as exc:  # a broken driver still leaves the run's record
            return f"{device} (name unavailable: {type(exc).__name__})"
    cpu = platform.processor() or platform.machine()
    return f"CPU {cpu}, {os.cpu_count()} cores"


def _git_commit() -> str | None:
    root = benchmarks_root().parent
    if not (root / ".git").exists():
        return None
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None


def _tolerance_policy(tasks: Sequence[Any]) -> dict[str, Any]:
    # The verifier's defaults; backends does not export them yet, so read the module that applies them.
    from backends import DEFAULT_TOLERANCE

    return {
        "default_atol_rtol": {str(dtype).replace("torch.", ""): list(tol) for dtype, tol in DEFAULT_TOLERANCE.items()},
        "task_overrides": {t.name: list(t.tolerance) for t in tasks if t.tolerance is not None},
        "nan": "never passes",
    }


def _timing_method(device: str, options: BenchOptions) -> str:
    from backends import EvalOptions

    eo = EvalOptions()
    if device.startswith("cuda"):
        return (
            f"CUDA events around each call; median of {options.reps} runs after {eo.warmup} warm-ups, the L2 flushed "
            "and the inputs cloned before each run; eager and torch.compile baselines timed in the same worker"
        )
    return (
        f"wall clock of Triton's CPU interpreter (TRITON_INTERPRET=1), median of {eo.cpu_reps} runs; "
        "no eager or torch.compile baselines off the GPU"
    )


def environment(device: str, options: BenchOptions, tasks: Sequence[Any], *, command: str | None = None) -> dict[str, Any]:
    """Hardware, versions, tolerance, trials and timing method: what DESIGN.md section 8 asks to keep with numbers."""
    import torch

    return {
        "device": device,
        "device_name": _device_name(device),
        "host": platform.node(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "triton": _version("triton"),
        "evokernel": _version("evokernel"),
        "git_commit": _git_commit(),
        "size": os.environ.get("EVOKERNEL_SIZE", "full"),
        "backend": options.backend,
        "tolerance": _tolerance_policy(tasks),
        "trials": options.trials,
        "timing_method": _timing_method(device, options),
        "command": command if command is not None else " ".join(["evokernel", *sys.argv[1:]]),
        "date_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }


def result_path(out: str | os.PathLike[str], data: dict[str, Any]) -> Path:
    """Where `--out` puts a result: OUT itself, or a generated name inside OUT when it is a directory."""
    path = Path(out)
    if path.is_dir() or os.fspath(out).endswith(("/", os.sep)):
        suite = Path(str(data.get("suite", "suite"))).name.removesuffix(".py") or "suite"
        env = data.get("environment", {})
        stamp = str(env.get("date_utc", "")).replace(":", "").replace("-", "").split("+")[0] or "result"
        kind = str(data.get("kind", "result")).removeprefix("evokernel-")
        name = f"{kind}-{suite}-{data.get('policy', '')}-{env.get('size', '')}-{stamp}.json"
        path = path / name.replace("/", "_").replace(":", "_")
    return path


def write_result(data: dict[str, Any], out: str | os.PathLike[str]) -> Path:
    import json

    path = result_path(out, data)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, default=str) + "\n")
    return path
