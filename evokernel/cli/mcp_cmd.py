"""`evokernel mcp`: the memory and the executor as tools for a coding agent (MCP over stdio)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from evokernel.options import RunOptions

from ._common import call, fail_usage, memory_path, use_environment_build_cache
from ._flags import settings


def register(app: typer.Typer) -> None:
    app.command("mcp")(mcp_command)


# The agent is the policy: the session takes what evaluates and retrieves, not the loop's budget or LLM.
@settings("run", "evaluation", "loop", "execution",
          only={"run": ("backend",), "loop": ("memory_mode", "n_memories", "skills", "seed", "port_from"),
                "execution": ("device", "gpus")})
def mcp_command(
    memory: Annotated[Optional[Path], typer.Option(
        help="Memory file (default: $EVOKERNEL_HOME/memory.db or ~/.local/share/evokernel/memory.db).")] = None,
    agent: Annotated[str, typer.Option(help="The agent's name in the runs, when its client does not give one.")] = "agent",
    *,
    options: RunOptions,
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
    call(serve, options, memory=memory_path(memory), agent=agent)
