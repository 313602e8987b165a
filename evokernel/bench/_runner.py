"""Run the loop over a benchmark suite and record the numbers with the
conditions they were measured under.

    result = run_bench("level1", RunOptions.of(budget=2), limit=4)
    result.metrics["correct_rate"], result.to_dict()

A suite is a bundled name (`level1`, `level2`, `level3`, `npu`, found in the
checkout's `benchmarks/` folder), a bundled example task (`softmax`), a
directory of task files or one task file. By default each run starts from a
fresh temporary memory, so its numbers do not depend on what an earlier run
taught the memory; `memory=` names a memory to use (and grow) instead. The
loop itself is `evokernel.run`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
import os
import platform
import re
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Sequence

from evokernel.options import EvaluationOptions, RunOptions

from ._metrics import compute_metrics, task_row

if TYPE_CHECKING:  # the loop (and torch with it) loads when a bench runs, not when this module does
    from evokernel.loop import OnEvent

BUNDLED_SUITES = ("level1", "level2", "level3", "npu")
RESULT_KIND = "evokernel-bench"
RESULT_VERSION = 1


class BenchError(ValueError):
    """A benchmark that cannot start: a bad suite, policy or option (the CLI's exit 2)."""


class BenchInterrupted(KeyboardInterrupt):
    """Ctrl-C (SIGINT) during a bench: still an interrupt, carrying the bench's result so far
    (`complete` False), so that a caller can write it before it exits."""

    def __init__(self, result: "BenchResult"):
        super().__init__("interrupted")
        self.result = result


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
    from evokernel.tasks import bundled_task_names, bundled_task_path

    text = os.fspath(source)
    path = Path(text)
    if text in bundled_task_names() and not path.exists():
        path = bundled_task_path(text)
    elif text in BUNDLED_SUITES and not path.exists():
        path = benchmarks_root() / text
        if not path.is_dir():
            raise SuiteError(
                f"the bundled suite {text!r} is not here: {path} does not exist. The suites ship with a "
                "checkout of the repository (pip install -e .), not with a wheel; pass a directory of task files instead."
            )
    elif not path.exists():
        raise SuiteError(f"{text!r} is neither a bundled suite ({', '.join(BUNDLED_SUITES)}), a bundled task "
                         f"({', '.join(bundled_task_names())}) nor an existing file or directory")
    if path.is_file():
        files = [path]
    else:
        files = sorted(f for f in path.glob("*.py") if not f.name.startswith("_"))
        if not files:
            raise SuiteError(f"{path} holds no task files (*.py)")
    return files[:limit] if limit else files


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
    complete: bool = True  # False: --time-limit stopped the run; the same command with --memory resumes it

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": RESULT_KIND,
            "version": RESULT_VERSION,
            "suite": self.suite,
            "complete": self.complete,
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


def bench_options(options: RunOptions, *, limit: int | None, memory: str | None) -> dict[str, Any]:
    """What a result records as its options: the run's, plus the suite's limit and memory."""
    return {**options.to_dict(), "limit": limit, "memory": memory}


@contextlib.contextmanager
def temporary_memory(copy_from: str | os.PathLike[str] | None = None) -> Iterator[Any]:
    """A fresh memory in a temporary directory (a copy of `copy_from` when given), removed afterwards."""
    from memory_store import MemoryStore

    with tempfile.TemporaryDirectory(prefix="evokernel-bench-") as tmp:
        db = Path(tmp) / "memory.db"
        if copy_from is not None:
            _copy_sqlite(Path(copy_from), db)
        with MemoryStore(db) as store:
            yield store


def _copy_sqlite(src: Path, dst: Path) -> None:
    """A consistent copy even while another process writes (WAL): SQLite's backup API."""
    if not src.is_file():
        raise SuiteError(f"no memory at {src}")
    try:
        with contextlib.closing(sqlite3.connect(str(src))) as a, contextlib.closing(sqlite3.connect(str(dst))) as b:
            a.backup(b)
    except sqlite3.DatabaseError as exc:
        raise BenchError(f"{src}: cannot copy the memory ({exc}); run `evokernel memory check --memory {src}`") from None


def run_suite(paths: Sequence[Path], options: Any, *, memory: Any = None, store: Any = None, policy: Any = None,
              executor: Any = None, on_event: OnEvent | None = None):
    """`evokernel.run` over a suite's files: a file that does not load counts as a task not solved."""
    from evokernel.loop import RunError, run

    try:
        return run(paths, options, policy=policy, executor=executor, memory=memory, store=store, on_event=on_event,
                   skip_broken=True)
    except RunError as exc:
        raise BenchError(str(exc)) from None


def check_options(options: RunOptions) -> None:
    """A bench or ablation needs a policy it can name: a registered one (`builtin`, a plugin's) or an LLM."""
    from evokernel.policies import policy_names

    if options.model is None and options.policy not in policy_names():
        raise BenchError(f"unknown policy {options.policy!r}; known: {', '.join(policy_names())}; "
                         "or --model PROVIDER:MODEL")


def run_bench(
    source: str | os.PathLike[str],
    options: RunOptions | None = None,
    *,
    limit: int | None = None,
    memory: str | os.PathLike[str] | None = None,
    policy: Any = None,
    executor: Any = None,
    on_event: OnEvent | None = None,
    command: str | None = None,
) -> BenchResult:
    """Run `options.loop.budget` steps on each task of a suite and compute its metrics.

    `options` is a `RunOptions`; `memory` names a bank to use and grow (default:
    a fresh temporary one, so the numbers do not depend on earlier runs);
    `policy` overrides the one `options` names (tests, wrappers); `command` is
    recorded as the command line (default: this process's argv). Raises
    BenchError (SuiteError for the suite) before any work when it cannot start.
    """
    from evokernel.loop import RunInterrupted

    options = options or RunOptions()
    check_options(options)
    paths = resolve_tasks(source, limit=limit)
    try:
        if memory is not None:
            run = run_suite(paths, options, memory=memory, policy=policy, executor=executor, on_event=on_event)
        else:
            with temporary_memory() as store:
                run = run_suite(paths, options, store=store, policy=policy, executor=executor, on_event=on_event)
    except RunInterrupted as stop:
        partial = _bench_result(stop.result, source, options, paths, limit=limit, memory=memory, command=command)
        raise BenchInterrupted(partial) from None
    return _bench_result(run, source, options, paths, limit=limit, memory=memory, command=command)


def _bench_result(run: Any, source: Any, options: Any, paths: Sequence[Path], *, limit: int | None, memory: Any,
                  command: str | None) -> BenchResult:
    return BenchResult(
        suite=os.fspath(source),
        metrics=compute_metrics(run.tasks, device=run.device, is_llm=run.policy_is_llm),
        tasks=[task_row(o) for o in run.tasks],
        environment=environment(run.device, options, paths, size=run.size, jobs=run.jobs, command=command),
        options=bench_options(options, limit=limit, memory=os.fspath(memory) if memory else None),
        policy=run.policy,
        policy_is_llm=run.policy_is_llm,
        accuracy_by_iteration=list(run.accuracy_by_iteration),
        run_id=run.run_id or None,
        memory=str(Path(memory).resolve()) if memory else "fresh temporary memory",
        complete=run.complete,
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


ARCHIVE_COMMIT = Path(__file__).resolve().parent.parent / "_archive_commit.txt"


def _git_commit(root: Path | None = None, archive_commit: Path = ARCHIVE_COMMIT) -> str | None:
    """The commit written into _archive_commit.txt where it holds one (git writes it into a `git
    archive` copy, export-subst; a copy made otherwise may have it written), else HEAD of the checkout
    the code runs from. The file comes first: a copied working tree can carry git metadata that is
    not its own (a device machine's copy reported its default branch's tip, not the tree that ran)."""
    root = root or benchmarks_root().parent
    try:
        text = archive_commit.read_text().strip()
    except OSError:
        text = ""
    if re.fullmatch(r"[0-9a-f]{40}", text):
        return text
    if not (root / ".git").exists():
        return None
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None


def _tolerance_policy(paths: Sequence[Path], size: str) -> dict[str, Any]:
    from backends import DEFAULT_TOLERANCE, TaskError, load_task

    overrides = {}
    for p in paths:
        try:
            task = load_task(p, size=size)  # the run imported it already: cached, the reference not run again
        except TaskError:
            continue  # a broken task is reported with its row
        if task.tolerance is not None:
            overrides[task.name] = list(task.tolerance)
    return {
        "default_atol_rtol": {str(dtype).replace("torch.", ""): list(tol) for dtype, tol in DEFAULT_TOLERANCE.items()},
        "task_overrides": overrides,
        "nan": "never passes",
    }


def _timing_method(device: str, evaluation: EvaluationOptions, workers_per_gpu: int = 1) -> str:
    from backends import EvalOptions

    if device.startswith("cuda"):
        if not evaluation.baselines:
            baselines = "no baselines timed"
        elif evaluation.compile_baseline:
            baselines = "eager and torch.compile baselines timed in the same worker"
        else:
            baselines = "the eager baseline timed in the same worker (no torch.compile baseline)"
        return (
            f"CUDA events around each call; median of {evaluation.reps} runs after {evaluation.warmup} warm-ups, the L2 "
            f"flushed and the inputs cloned before each run; {baselines}"
            + (f"; {workers_per_gpu} workers share each GPU, every timing and kernel profile with the GPU to itself"
               if workers_per_gpu > 1 else "")
        )
    return (
        f"wall clock of Triton's CPU interpreter (TRITON_INTERPRET=1), median of {EvalOptions().cpu_reps} runs; "
        "no eager or torch.compile baselines off the GPU"
    )


def environment(device: str, options: RunOptions, paths: Sequence[Path], *, size: str, jobs: int,
                command: str | None = None) -> dict[str, Any]:
    """Hardware, versions, tolerance, trials, rules and timing method: what is kept with the numbers."""
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
        "size": size,
        "precision": options.evaluation.precision,
        "backend": options.backend,
        "rules": options.evaluation.rules,
        "jobs": jobs,
        "tolerance": _tolerance_policy(paths, size),
        "trials": options.evaluation.trials,
        "timing_method": _timing_method(device, options.evaluation, options.execution.workers_per_gpu),
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
        precision = env.get("precision", "fp32")
        size = env.get("size", "") + ("" if precision == "fp32" else f"-{precision}")
        name = f"{kind}-{suite}-{data.get('policy', '')}-{size}-{stamp}.json"
        path = path / name.replace("/", "_").replace(":", "_")
    return path


def write_result(data: dict[str, Any], out: str | os.PathLike[str]) -> Path:
    import json

    path = result_path(out, data)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, default=str) + "\n")
    return path
