"""Helpers shared by the command modules: consoles, exit codes, JSON output."""

from __future__ import annotations

import json
import os
import sys
from typing import Annotated, Any, Optional

import typer

EXIT_OK = 0
EXIT_REJECTED = 1  # a domain failure: the candidate or run did not succeed
EXIT_USAGE = 2  # bad usage or bad input file


def err_console():
    from rich.console import Console

    return Console(stderr=True)


def out_console():
    from rich.console import Console

    return Console()


def print_json(obj: Any) -> None:
    """One JSON object on one stdout line, nothing else on stdout."""
    sys.stdout.write(json.dumps(obj, default=str) + "\n")
    sys.stdout.flush()


def fail_usage(message: str) -> "typer.Exit":
    err_console().print(f"[bold red]error:[/] {message}", highlight=False)
    return typer.Exit(EXIT_USAGE)


def default_size_for(device: str) -> str | None:
    """On a CPU, tasks run at their small size unless the user chose one."""
    if device == "cpu" and "EVOKERNEL_SIZE" not in os.environ:
        os.environ["EVOKERNEL_SIZE"] = "small"
        return "small"
    return None


# Options shared by several commands, so each reads and helps the same way.
ModelOpt = Annotated[Optional[str], typer.Option(help="LLM as PROVIDER:MODEL (openai:..., anthropic:...).")]
BackendOpt = Annotated[str, typer.Option(help="Executor backend: triton, cuda or ascendc (see `evokernel backends`).")]
BudgetOpt = Annotated[int, typer.Option(min=1, help="Steps per task.")]
DeviceOpt = Annotated[Optional[str], typer.Option(help="cuda:N or cpu; default: the first GPU if any.")]
TimeoutOpt = Annotated[float, typer.Option(help="Wall-clock limit per candidate, in seconds.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout, and nothing else there.")]


def prepare_device(backend: str, device: str | None) -> str:
    """Check the backend, pick the device and, on a CPU, the small task size (said on stderr)."""
    from backends import backend_names, default_device

    if backend not in backend_names():
        raise fail_usage(f"unknown backend {backend!r}; known: {', '.join(backend_names())}")
    device = device or default_device()
    if default_size_for(device):
        err_console().print(
            "no GPU: tasks run at EVOKERNEL_SIZE=small (set EVOKERNEL_SIZE to choose); latencies are not GPU numbers",
            style="dim",
        )
    return device
