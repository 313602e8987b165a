"""`evokernel browse`: the memory as a read-only local web page (evokernel.browse)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from ._common import fail_usage, interrupted, memory_path


def register(app: typer.Typer) -> None:
    app.command("browse")(browse_command)


def browse_command(
    memory: Annotated[Optional[Path], typer.Option(
        help="Memory file (default: $EVOKERNEL_HOME/memory.db or ~/.local/share/evokernel/memory.db).")] = None,
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port to listen on (0: any free one).")] = 8001,
    host: Annotated[str, typer.Option(help="Address to listen on; beyond loopback needs --allow-remote.")] = "127.0.0.1",
    allow_remote: Annotated[bool, typer.Option(
        "--allow-remote", help="Allow a non-loopback --host: anyone who reaches it reads the bank (prefer an SSH tunnel).")] = False,
) -> None:
    """Browse the memory in a web browser: runs (live while they write), tasks with their attempts,
    lineage and diffs, memory values, skills, LLM calls and search. Read-only; Ctrl-C stops it."""
    from evokernel.browse import BrowseError, ServeOptions, is_loopback, serve

    path = memory_path(memory, must_exist=True)
    try:
        options = ServeOptions(host=host, port=port, allow_remote=allow_remote)
    except BrowseError as exc:
        raise fail_usage(str(exc)) from None
    if not is_loopback(host):
        sys.stderr.write(f"warning: serving {path} on {host}: anyone who can reach this address reads every kernel, "
                         "prompt and answer in it, with no login\n")

    def ready(url: str) -> None:
        sys.stderr.write(f"browsing {path} (read-only) at {url}  (Ctrl-C to stop)\n")
        sys.stderr.flush()

    try:
        serve(path, options, on_ready=ready)
    except BrowseError as exc:
        raise fail_usage(str(exc)) from None
    except KeyboardInterrupt:
        raise interrupted("stopped") from None
