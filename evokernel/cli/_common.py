"""Helpers shared by the command modules: consoles, exit codes, JSON output."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

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
