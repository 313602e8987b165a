"""The MCP server: the session's methods as tools, over stdio, on the official SDK.

Each tool runs its session call in a worker thread, so the server keeps
answering (pings, progress, other tools) while an evaluation runs; a
submission reports progress notifications until its verdict is in. Every
failure comes back as a tool error with a message saying what to change; the
server itself never stops on one.
"""

from __future__ import annotations

import functools
import logging
import time
from typing import Annotated, Any, Callable, TypeVar

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from ._records import BestKernel, MemoryStats, Retrieval, Submission, TaskList, TaskView
from ._errors import ToolInputError
from ._session import AgentSession

T = TypeVar("T")
TOOL_NAMES = ("list_tasks", "show_task", "retrieve_memories", "submit_candidate", "best_kernel", "memory_stats")
_log = logging.getLogger("evokernel.mcp")

INSTRUCTIONS = """\
EvoKernel verifies kernels and remembers what worked. A task is a PyTorch reference (class Model); a
candidate is one Python file defining class ModelNew with the same constructor and forward, computing
with its own kernels. Work on a task like this:
1. list_tasks, then show_task: the reference, shapes, dtypes, tolerance and the rules a candidate must keep.
2. retrieve_memories: earlier experiences and kernels (of this task and others) chosen by their learned
   value, and when refining the kernel to start from.
3. Write the whole candidate file and call submit_candidate with the ids of the memories you used (and
   start_point_id if you refined that kernel). The verdict, the verifier's feedback, the latency and the
   reward come back; every submission is kept, and the memories you used learn from it.
4. Repeat from 2; best_kernel gives the fastest correct kernel so far.
Cheating (calling the reference, torch compute in forward, caching outputs, timer tricks) is rejected as
a hack and lowers the value of the memories that led to it."""

TaskArg = Annotated[str, Field(description="A task file path, a bundled task name (see list_tasks), SUITE/NAME of a "
                                           "bundled suite (level1/01_relu) or a task key from list_tasks.")]


def _client_name(ctx: Any) -> str | None:
    """The connected client's name (`claude-code`, `codex`...), as it introduced itself."""
    try:
        info = ctx.session.client_params.client_info
    except AttributeError:
        return None
    name = getattr(info, "name", None)
    return str(name)[:60] if name else None


async def _call(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """A session call in a worker thread; its failures as tool errors the agent can act on."""
    from evokernel.loop import RunError
    from memory_store import MemoryStoreError

    try:
        return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs))
    except (ToolInputError, RunError, MemoryStoreError) as exc:
        raise ToolError(str(exc)) from None
    except Exception as exc:
        _log.exception("%s failed", getattr(fn, "__name__", "a tool"))
        raise ToolError(f"internal error ({type(exc).__name__}: {exc}); the server is still running and "
                        "nothing was committed for this call") from None


def build_server(session: AgentSession, *, progress_interval_s: float = 2.0) -> MCPServer:
    """An `MCPServer` whose tools (`TOOL_NAMES`) call `session`."""
    from evokernel import __version__

    server = MCPServer("evokernel", title="EvoKernel", version=__version__, instructions=INSTRUCTIONS,
                       log_level="WARNING")

    @server.tool()
    async def list_tasks(
        source: Annotated[str | None, Field(description="Also list the tasks of this bundled suite (level1, level2, "
                                                         "level3, npu), directory or file.")] = None,
    ) -> TaskList:
        """The bundled example tasks and suites, the tasks of `source`, and the tasks already in the memory with
        their best latency and stage on this server's backend."""
        return await _call(session.list_tasks, source)

    @server.tool()
    async def show_task(task: TaskArg) -> TaskView:
        """A task's reference source, input and output shapes and dtypes, tolerance, the rules a candidate must
        keep on this backend, and the current best kernel."""
        return await _call(session.show_task, task)

    @server.tool()
    async def retrieve_memories(
        task: TaskArg,
        ctx: Context,
        stage: Annotated[str | None, Field(description="draft (no correct kernel yet) or refine (make it faster); "
                                                        "default: the stage the task's next step takes.")] = None,
    ) -> Retrieval:
        """The memories the loop would put in the prompt of the task's next step (experiences and kernels with
        their ids and learned values, API notes) and, when refining, the start point chosen by its value."""
        return await _call(session.retrieve_memories, task, stage, client=_client_name(ctx))

    @server.tool()
    async def submit_candidate(
        task: TaskArg,
        source: Annotated[str, Field(description="The whole candidate file: imports, kernels and class ModelNew.")],
        ctx: Context,
        used_memory_ids: Annotated[list[int], Field(description="Ids (from retrieve_memories) of the memories this "
                                                                 "candidate drew on; their values learn from it.")] = [],
        start_point_id: Annotated[int | None, Field(description="The feasible kernel this candidate refines (the "
                                                                 "start point's id), if any.")] = None,
    ) -> Submission:
        """Compile, verify and time a candidate in an isolated worker (the rules and checks of `evokernel eval`),
        then commit it as the task's next step: trace, experience, reward and the value updates of the used
        memories, in one transaction. Returns the verdict, feedback, latency, baselines and reward."""
        phase = ["starting"]
        outcome: list[Any] = []
        started = time.monotonic()

        async def report() -> None:
            sent, last = None, 0.0
            while True:
                now = time.monotonic()
                if phase[0] != sent or now - last >= progress_interval_s:
                    sent, last = phase[0], now
                    await ctx.report_progress(round(now - started, 3), None, f"{sent} ({now - started:.0f} s)")
                await anyio.sleep(min(0.25, progress_interval_s))

        async with anyio.create_task_group() as group:
            group.start_soon(report)
            try:
                outcome.append(await _call(session.submit_candidate, task, source, list(used_memory_ids),
                                           start_point_id, client=_client_name(ctx),
                                           progress=lambda message: phase.__setitem__(0, message)))
            except Exception as exc:  # raised below, outside the task group (which would wrap it)
                outcome.append(exc)
            finally:
                group.cancel_scope.cancel()
        if isinstance(outcome[0], Exception):
            raise outcome[0]
        return outcome[0]

    @server.tool()
    async def best_kernel(task: TaskArg) -> BestKernel:
        """The fastest feasible kernel of a task in the memory on this backend: its source, latency, how it was
        measured and where it came from (run, policy, stage, parent)."""
        return await _call(session.best_kernel, task)

    @server.tool()
    async def memory_stats() -> MemoryStats:
        """The memory's counts (items by kind and backend, tasks, runs, steps, value updates) and a summary of
        its learned values (per kind, and the most valuable items per stage), with the reward statistics."""
        return await _call(session.memory_stats)

    return server


def serve(options: Any, *, memory: Any = None, agent: str = "agent") -> None:
    """Serve a session over stdio until the client disconnects; its runs are then finished.

    `options` is the loop's `RunOptions`; raises `RunError` when the session cannot start.
    """
    session = AgentSession(options, memory=memory, agent=agent)
    try:
        anyio.run(build_server(session).run_stdio_async)
    finally:
        session.close()
