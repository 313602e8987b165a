"""Helpers shared by the command modules: consoles, exit codes, errors, options.

Data goes to stdout (only JSON with `--json`), everything else to stderr. An
error is one line on stderr, `error: ...`, with exit code 2 for bad usage or
bad input, 1 for a domain failure, 130 on Ctrl-C.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any, Callable, Optional, TypeVar

import typer

from ._llm_options import ContextTokensOpt, MultiTurnOpt, ReasoningEffortOpt, ThinkingTokensOpt, llm_options
from ._llm_options import ModelsOpt as ModelOpt
from ._exit import EXIT_INTERRUPTED, EXIT_OK, EXIT_REJECTED, EXIT_USAGE, fail_usage, interrupted, one_line  # noqa: F401 (re-exported)

T = TypeVar("T")

# A table printed to a pipe or a file keeps every value whole: no terminal
# width to fit, so rich gets a width it never reaches.
_UNBOUNDED = 100_000


def err_console():
    from rich.console import Console

    console = Console(stderr=True, soft_wrap=True, highlight=False)
    # Off a terminal (a log file, `2>&1 | cat`), a table on stderr keeps whole values too.
    return console if console.is_terminal else Console(stderr=True, soft_wrap=True, highlight=False, width=_UNBOUNDED)


def out_console():
    from rich.console import Console

    console = Console()
    return console if console.is_terminal else Console(width=_UNBOUNDED)


def print_result_table(table: Any, result: Any) -> None:
    """An EvalResult's rich table on stdout, its kernels and warnings added last; the
    verifier's feedback below it when the candidate failed and it says more than the message."""
    for k in result.kernels:
        table.add_row("kernel", f"{k.name} {k.summary()}")
    for w in result.warnings:
        table.add_row("warning", f"[yellow]{w}[/]")
    out = out_console()
    out.print(table)
    if not result.feasible and result.feedback and result.feedback != result.message:
        out.print(result.feedback, highlight=False, markup=False)


def first_correct_cell(first_correct_attempt: int | None, started_from_item_id: int | None) -> str:
    """The attempt that first made a correct kernel; a task this run started from a
    kernel of an earlier run says so (its "x first" is measured from that kernel too)."""
    if first_correct_attempt is not None:
        return str(first_correct_attempt)
    return "earlier run" if started_from_item_id is not None else "-"


def print_json(obj: Any) -> None:
    """One JSON object on one stdout line, nothing else on stdout."""
    sys.stdout.write(json.dumps(obj, default=str) + "\n")
    sys.stdout.flush()


def call(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """A library call as a command makes it: a run that cannot start is a usage
    error (one line, exit 2); Ctrl-C exits 130 and says the memory is safe."""
    from evokernel.loop import RunError

    try:
        return fn(*args, **kwargs)
    except RunError as exc:
        raise fail_usage(str(exc)) from None
    except KeyboardInterrupt:
        raise interrupted("interrupted: every completed step is in the memory; run the same command to resume") from None


def memory_path(memory: Path | None, *, must_exist: bool = False) -> Path:
    """The memory file a command uses: `--memory`, else the default that `$EVOKERNEL_HOME`
    or `$XDG_DATA_HOME` names (the environment is read here, at the edge, and the library
    gets the path). A directory, or a missing file where one must exist, is a usage error."""
    import os

    from memory_store import default_memory_path

    path = Path(memory).expanduser() if memory is not None else default_memory_path(os.environ)
    if path.is_dir():
        raise fail_usage(f"--memory {path} is a directory; give the database file inside it, e.g. {path / 'memory.db'}")
    blocking = next((p for p in path.parents if p.exists() and not p.is_dir()), None)
    if blocking is not None:  # EVOKERNEL_HOME (or --memory) names a file as a folder
        raise fail_usage(f"the memory {path} cannot be made: {blocking} is a file, not a folder")
    if must_exist and not path.exists():
        raise fail_usage(f"no memory at {path} (pass --memory or set EVOKERNEL_HOME)")
    return path


def use_environment_build_cache() -> None:
    """CUDA and Ascend C builds go under `$EVOKERNEL_CACHE` when it is set (read here, at
    the edge; workers are given the root as an argument)."""
    import os

    from backends import use_build_cache

    use_build_cache(os.environ.get("EVOKERNEL_CACHE") or None)


def prepare_device(backend: str, device: str | None) -> str:
    """Check the backend and pick the device (the first GPU, else the CPU); builds go
    where `$EVOKERNEL_CACHE` says."""
    from backends import backend_names, default_device

    use_environment_build_cache()

    if backend not in backend_names():
        raise fail_usage(f"unknown backend {backend!r}; known: {', '.join(backend_names())}")
    return device or default_device()


def size_note(device: str, size: str | None) -> str | None:
    """What a user on a CPU should know about the sizes and latencies they will see."""
    if device.startswith("cuda"):
        return None
    chosen = size or "small"
    return f"no GPU: tasks run at size {chosen!r} (--size to choose); latencies are not GPU numbers"


def parse_gpus(text: str | None) -> tuple[int, ...] | None:
    """`--gpus 0,1` -> (0, 1)."""
    if text is None:
        return None
    try:
        gpus = tuple(int(p) for p in text.split(",") if p.strip())
    except ValueError:
        raise fail_usage(f"--gpus takes device indices such as 0,1; got {text!r}") from None
    if not gpus:
        raise fail_usage("--gpus needs at least one device index")
    return gpus


def run_options(**fields: Any):
    """`RunOptions` from the parsed options; a bad combination is a usage error.

    `model` is the list `--model` gave (an ensemble when several); with the LLM
    flags (`context_tokens`, `multi_turn`, `reasoning_effort`, `thinking_tokens`)
    it becomes the run's `LLMOptions`."""
    from evokernel.loop import RunError, RunOptions

    models = fields.pop("model", None)
    flags = {k: fields.pop(k) for k in ("context_tokens", "multi_turn", "reasoning_effort", "thinking_tokens") if k in fields}
    llm = llm_options(list(models or []), replay=bool(fields.get("replay", False)), **flags)
    try:
        return RunOptions(llm=llm, **fields)
    except RunError as exc:
        raise fail_usage(str(exc)) from None


# Options shared by several commands, so each reads and helps the same way.
BackendOpt = Annotated[str, typer.Option(help="Executor backend: triton, cuda or ascendc (see `evokernel backends`).")]
BudgetOpt = Annotated[int, typer.Option(min=1, help="Steps per task.")]


def check_device(value: Optional[str]) -> Optional[str]:
    """A `--device` value as the backends name devices; anything else is a usage error."""
    from evokernel.loop import DEVICE_NAME

    if value is not None and not DEVICE_NAME.fullmatch(value):
        raise typer.BadParameter(f"{value!r} is not a device; use cpu, cuda or cuda:N (npu:N for Ascend C)")
    return value


DeviceOpt = Annotated[Optional[str], typer.Option(callback=check_device, help="cuda:N or cpu; default: every visible GPU, else the CPU.")]


def _positive(value: float) -> float:
    from evokernel.loop import MAX_SECONDS

    if not value > 0:
        raise typer.BadParameter(f"{value:g} is not a positive number of seconds")
    if not value <= MAX_SECONDS:  # inf, or a number the OS's timers cannot hold
        raise typer.BadParameter(f"{value:g} seconds is more than the most allowed, {MAX_SECONDS:g} (a week)")
    return value


TimeoutOpt = Annotated[float, typer.Option(callback=_positive, help="Wall-clock limit per candidate, in seconds (> 0).")]


def _positive_or_none(value: Optional[float]) -> Optional[float]:
    return None if value is None else _positive(value)


TimeLimitOpt = Annotated[Optional[float], typer.Option(
    "--time-limit", callback=_positive_or_none, metavar="SECONDS",
    help="Start no new step after this many seconds; the run stays unfinished and the same command resumes it "
         "(bench: the results say complete: false).")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout, and nothing else there.")]
SeedOpt = Annotated[int, typer.Option(help="Seed of the loop's random choices.")]
TrialsOpt = Annotated[int, typer.Option(min=1, help="Correctness trials with fresh seeded inputs.")]
RepsOpt = Annotated[int, typer.Option(min=1, help="Timed runs per candidate on a GPU.")]


def _size(value: Optional[str]) -> Optional[str]:
    from evokernel.loop import SIZES

    if value is not None and value not in SIZES:
        raise typer.BadParameter(f"{value!r} is not a task size; choose {' or '.join(SIZES)}")
    return value


SizeOpt = Annotated[Optional[str], typer.Option(
    callback=_size, help="Task size: full or small; default: small without a GPU, full on one.")]
RulesOpt = Annotated[str, typer.Option(help="Rule set: strict (own kernels only) or kernelbench (partial replacement).")]
# The executor's options a comparison with KernelBench needs (backends.EvalOptions).
WarmupOpt = Annotated[int, typer.Option(min=0, help="Warm-up runs before timing on a GPU.")]
BaselinesOpt = Annotated[bool, typer.Option(help="Time the eager and torch.compile baselines (GPU).")]
CompileBaselineOpt = Annotated[bool, typer.Option(help="With baselines, time torch.compile too (GPU); KernelBench's eval does not.")]
AtolOpt = Annotated[Optional[float], typer.Option(
    min=0.0, help="Absolute tolerance for every output (default: the task's TOLERANCE, else 1e-4 fp32, 1e-2 fp16/bf16).")]
RtolOpt = Annotated[Optional[float], typer.Option(min=0.0, help="Relative tolerance for every output (default as --atol).")]
KernelbenchSeedingOpt = Annotated[bool, typer.Option(
    "--kernelbench-seeding", help="Draw inputs as KernelBench's eval does (trial seeds from seed 42, values from the host "
                                  "generator), to reproduce a published number.")]
JobsOpt = Annotated[Optional[int], typer.Option(
    min=1, help="Steps in flight at once; default: up to 16 with an LLM, the CPU cores (or GPUs) otherwise.")]
GpusOpt = Annotated[Optional[str], typer.Option(help="GPUs to evaluate on, e.g. 0,1 (one worker each); default: all.")]
EngineOpt = Annotated[str, typer.Option(help="local (worker processes here) or ray (Ray tasks; pip install 'evokernel[ray]').")]
MinOwnShareOpt = Annotated[float, typer.Option(
    min=0.0, max=1.0, help="Under --rules kernelbench: own kernels' least share of GPU time (0: report only).")]


def parse_bytes(text: str | None) -> int | None:
    """'8G', '512M', '1000000' -> bytes (powers of 1024 for K/M/G/T)."""
    if text is None:
        return None
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    t = text.strip().upper().removesuffix("B").removesuffix("I")
    try:
        value = float(t[:-1]) * units[t[-1]] if t and t[-1] in units else float(t)
    except ValueError:
        raise typer.BadParameter(f"{text!r} is not a size such as 8G, 512M or a number of bytes") from None
    if not value > 0:
        raise typer.BadParameter(f"{text!r} is not a positive size")
    return int(value)


MemoryBudgetOpt = Annotated[Optional[str], typer.Option(
    "--memory-budget", metavar="SIZE",
    help="At most this much device memory for one evaluation (8G, 512M...); a task that needs more is a task_error.")]
MemoryModeOpt = Annotated[str, typer.Option("--memory-mode", help="off, task-only, similarity or value (ablations).")]
SkillsOpt = Annotated[bool, typer.Option(
    help="The verified skill library: propose skills from improving steps, verify and select them (--no-skills: off).")]
RerankOpt = Annotated[bool, typer.Option(
    help="With --model, one short LLM call reranks the recalled skills (--no-rerank: by their stage values).")]
