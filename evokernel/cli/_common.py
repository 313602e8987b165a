"""Helpers shared by the command modules: consoles, exit codes, errors, options.

Data goes to stdout (only JSON with `--json`), everything else to stderr. An
error is one line on stderr, `error: ...`, with exit code 2 for bad usage or
bad input, 1 for a domain failure, 130 on Ctrl-C.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any, Callable, TypeVar

import typer

from evokernel.options import RunOptions

from ._exit import (  # noqa: F401 (re-exported)
    EXIT_INTERRUPTED, EXIT_OK, EXIT_REJECTED, EXIT_USAGE, fail_usage, interrupted, one_line, stop_on_terminate,
)

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
    error (one line, exit 2); Ctrl-C (or SIGTERM) exits 130 and says the memory is safe."""
    from evokernel.loop import RunError

    try:
        with stop_on_terminate():
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


def prepare(options: RunOptions) -> RunOptions:
    """The options a command runs with: the backend checked, the size decided from the run's
    device (`RunOptions.resolved`); builds go where `$EVOKERNEL_CACHE` says."""
    from backends import backend_names

    use_environment_build_cache()
    if options.backend not in backend_names():
        raise fail_usage(f"unknown backend {options.backend!r}; known: {', '.join(backend_names())}")
    return options.resolved()


def size_note(options: RunOptions) -> str | None:
    """What a user on a CPU should know about the sizes and latencies they will see
    (`options` resolved: its size decided)."""
    if options.execution.run_device().startswith("cuda"):
        return None
    return f"no GPU: tasks run at size {options.evaluation.size!r} (--size to choose); latencies are not GPU numbers"


# Options several commands share beyond the run's settings (evokernel/cli/_flags.py has those).
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout, and nothing else there.")]
