"""The draft/refine loop over a batch of tasks, with memory-driven context.

`run(tasks, options)` is the entry point (also `evokernel.run`); `RunOptions`
holds every setting; `RunResult.tasks` holds one `TaskOutcome` per task, built
from one `Attempt` per step.
"""

from evokernel._step import FEASIBLE_STATUSES, MemoryNote, Policy, Proposal, StartPointView, StepContext, StepPlan

from ._concurrent import RunMonitor, run_all
from ._events import (OnEvent, RunEvent, RunFinished, RunStarted, RunStats, SkillLearned, StepDone, StepStarted,
                      TaskEvent, TaskStopped, TimeLimitReached)
from ._loop import Runner, choose_start, export_best
from ._options import (DEVICE_NAME, ENGINES, MAX_SECONDS, MEMORY_MODES, SIZES, EvaluationOptions, ExecutionOptions,
                       LoopOptions, RunError, RunOptions, default_jobs)
from ._rewards import TIMING_TIE, draft_reward, refine_reward
from ._run import load_tasks, make_executor, make_policy, refine, run
from ._tasks import resolve_task_args, tasks_in_bank
from ._types import Attempt, RunInterrupted, RunResult, TaskOutcome

__all__ = [
    "DEVICE_NAME",
    "ENGINES",
    "FEASIBLE_STATUSES",
    "MAX_SECONDS",
    "MEMORY_MODES",
    "SIZES",
    "TIMING_TIE",
    "Attempt",
    "EvaluationOptions",
    "ExecutionOptions",
    "LoopOptions",
    "MemoryNote",
    "OnEvent",
    "Policy",
    "Proposal",
    "RunError",
    "RunEvent",
    "RunFinished",
    "RunMonitor",
    "RunOptions",
    "RunInterrupted",
    "RunResult",
    "RunStarted",
    "RunStats",
    "Runner",
    "SkillLearned",
    "StartPointView",
    "StepContext",
    "StepDone",
    "StepPlan",
    "StepStarted",
    "TaskEvent",
    "TaskOutcome",
    "TaskStopped",
    "TimeLimitReached",
    "choose_start",
    "default_jobs",
    "draft_reward",
    "export_best",
    "load_tasks",
    "make_executor",
    "make_policy",
    "refine",
    "refine_reward",
    "resolve_task_args",
    "run",
    "run_all",
    "tasks_in_bank",
]
