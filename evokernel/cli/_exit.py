"""Exit codes and the one-line error every command ends with (the option modules use it too)."""

from __future__ import annotations

import sys

import typer

EXIT_OK = 0
EXIT_REJECTED = 1  # a domain failure: the candidate or run did not succeed
EXIT_USAGE = 2  # bad usage or bad input file
EXIT_INTERRUPTED = 130


def one_line(message: str) -> str:
    return " ".join(part.strip() for part in str(message).splitlines() if part.strip())


def fail_usage(message: str) -> "typer.Exit":
    """Say what is wrong on one stderr line; the exit to raise (code 2)."""
    sys.stderr.write(f"error: {one_line(message)}\n")
    sys.stderr.flush()
    return typer.Exit(EXIT_USAGE)


def interrupted(what: str = "interrupted") -> "typer.Exit":
    sys.stderr.write(f"{what}\n")
    sys.stderr.flush()
    return typer.Exit(EXIT_INTERRUPTED)
