"""The draft/refine loop over a batch of tasks, with memory-driven context."""

from ._loop import Runner, export_best, run_tasks, task_key_for
from ._rewards import draft_reward, refine_reward
from ._tasks import resolve_task_args, tasks_in_bank
from ._types import (
    MEMORY_MODES,
    MemoryNote,
    Policy,
    Proposal,
    RunConfig,
    RunResult,
    StartPointView,
    StepContext,
    TaskOutcome,
)

__all__ = [
    "MEMORY_MODES",
    "MemoryNote",
    "Policy",
    "Proposal",
    "RunConfig",
    "RunResult",
    "Runner",
    "StartPointView",
    "StepContext",
    "TaskOutcome",
    "draft_reward",
    "export_best",
    "refine_reward",
    "resolve_task_args",
    "run_tasks",
    "task_key_for",
    "tasks_in_bank",
]
