"""`evokernel mcp`: the memory and the executor as tools for a coding agent (MCP over stdio)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ._common import (BackendOpt, check_device, RulesOpt, SeedOpt, SizeOpt, TimeoutOpt, TrialsOpt, call, fail_usage, memory_path,
                      run_options, use_environment_build_cache)


def register(app: typer.Typer) -> None:
    app.command("mcp")(mcp_command)


def mcp_command(
    memory: Annotated[Optional[Path], typer.Option(
        help="Memory file (default: $EVOKERNEL_HOME/memory.db or ~/.local/share/evokernel/memory.db).")] = None,
    backend: BackendOpt = "triton",
    rules: RulesOpt = "strict",
    device: Annotated[Optional[str], typer.Option(callback=check_device, help="cuda:N or cpu; default: every visible GPU, else the CPU.")] = None,
    size: SizeOpt = None,
    timeout: TimeoutOpt = 300.0,
    trials: TrialsOpt = 5,
    seed: SeedOpt = 0,
    agent: Annotated[str, typer.Option(help="The agent's name in the runs, when its client does not give one.")] = "agent",
) -> None:
    """Serve the memory and the executor to a coding agent over MCP (stdio).

    Tools: list_tasks, show_task, retrieve_memories, submit_candidate, best_kernel,
    memory_stats. stdout carries the protocol; messages go to stderr. Each task the
    agent works on is a run in the memory, finished when the client disconnects.
    """
    try:
        from evokernel.mcp import serve
    except ImportError as exc:  # the SDK is a dependency; a broken install says which
        raise fail_usage(f"the MCP server needs the official SDK (pip install 'mcp>=2'): {exc}") from None
    use_environment_build_cache()
    options = run_options(backend=backend, rules=rules, device=device, size=size, timeout_s=timeout, trials=trials,
                          seed=seed)
    call(serve, options, memory=memory_path(memory), agent=agent)
