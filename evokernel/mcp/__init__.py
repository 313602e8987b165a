"""EvoKernel as an MCP server: coding agents drive the memory and the executor as tools.

    evokernel mcp --memory memory.db --backend triton

serves, over stdio, `list_tasks`, `show_task`, `retrieve_memories`,
`submit_candidate`, `best_kernel` and `memory_stats`. A submission is
evaluated by the executor and committed as a step of the loop (the loop's own
`Runner.plan_step` and `Runner.commit_step`), so an agent's work and
`evokernel run` share one bank and one value function.

    from evokernel.mcp import AgentSession
    with AgentSession(RunOptions.of(device="cpu"), memory="memory.db") as session:
        print(session.retrieve_memories("softmax").memories)
"""

from ._records import (
    BestKernel,
    MemoryRecord,
    MemoryStats,
    Retrieval,
    StartPointRecord,
    Submission,
    SuiteEntry,
    TaskEntry,
    TaskList,
    TaskView,
    TensorSpec,
    Tolerance,
    ValueChange,
)
from ._server import INSTRUCTIONS, TOOL_NAMES, build_server, serve
from ._errors import ToolInputError
from ._session import AgentPolicy, AgentSession

__all__ = [
    "INSTRUCTIONS",
    "TOOL_NAMES",
    "AgentPolicy",
    "AgentSession",
    "BestKernel",
    "MemoryRecord",
    "MemoryStats",
    "Retrieval",
    "StartPointRecord",
    "Submission",
    "SuiteEntry",
    "TaskEntry",
    "TaskList",
    "TaskView",
    "TensorSpec",
    "Tolerance",
    "ToolInputError",
    "ValueChange",
    "build_server",
    "serve",
]
