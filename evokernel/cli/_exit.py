"""Exit codes and the one-line error every command ends with (the option modules use it too)."""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from typing import Any, Iterator

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


def _terminate(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


@contextlib.contextmanager
def stop_on_terminate() -> Iterator[None]:
    """Inside the block, SIGTERM stops the command as Ctrl-C does, so what it measured is written.

    `kill`, `timeout` and job schedulers send SIGTERM; and a command started in the background
    by a script (`cmd &`, `nohup cmd &`) gets SIGINT ignored by the shell, so SIGTERM is the one
    signal that reaches it. Only the main thread may set handlers; elsewhere the block changes nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
