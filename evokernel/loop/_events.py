"""What a run tells its watcher (`run(..., on_event=...)`), as typed records.

Each event is a frozen dataclass; a watcher matches on the class
(`isinstance(event, StepDone)`) and reads fields, never string keys. Every
event carries the run's in-flight snapshot (`RunStats`) as it was when the
event was emitted, and `arm`, the ablation arm that ran it ("" outside an
ablation: `evokernel ablate` tags its arms' events with `with_arm`).
"""

from __future__ import annotations

import dataclasses
from typing import Callable

from backends import Verdict


@dataclasses.dataclass(frozen=True)
class RunStats:
    """What is in flight when an event is emitted, and the LLM usage so far."""

    proposing: int = 0  # steps asking their policy (for an LLM: calls waiting on the network)
    evaluating: int = 0  # steps whose candidate is being evaluated (or re-timed for a skill)
    queued: int = 0  # evaluations waiting for a free worker (the executor's `waiting`)
    peak_proposing: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    elapsed_s: float = 0.0

    @property
    def in_flight(self) -> int:
        return self.proposing + self.evaluating


@dataclasses.dataclass(frozen=True, kw_only=True)
class RunEvent:
    stats: RunStats = RunStats()
    arm: str = ""

    def with_arm(self, arm: str) -> "RunEvent":
        return dataclasses.replace(self, arm=arm)


@dataclasses.dataclass(frozen=True, kw_only=True)
class RunStarted(RunEvent):
    run_id: int
    resumed: bool
    jobs: int
    tasks: tuple[str, ...]
    done: tuple[int, ...]  # each task's steps already committed (a resumed run), so a count ends at the budget


@dataclasses.dataclass(frozen=True, kw_only=True)
class TaskEvent(RunEvent):
    task: str  # the task's name


@dataclasses.dataclass(frozen=True, kw_only=True)
class StepStarted(TaskEvent):
    stage: str
    step: int
    iteration: int


@dataclasses.dataclass(frozen=True, kw_only=True)
class StepDone(TaskEvent):
    stage: str
    step: int
    iteration: int
    status: Verdict
    latency_ms: float | None
    reward: float
    best_latency_ms: float | None  # the task's best so far in this run
    speedup_over_first: float | None
    message: str  # the verdict's message, cut to 300 characters


@dataclasses.dataclass(frozen=True, kw_only=True)
class TaskStopped(TaskEvent):
    """The policy has nothing more to offer for this task (its remaining steps are not taken)."""

    reason: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class SkillLearned(TaskEvent):
    """A step's improvement summarised into a skill and re-timed: admitted, merged, rejected or skipped."""

    action: str  # evokernel.skills.Action's value
    title: str
    source: str  # who wrote the summary ("llm" or "builtin")
    step_speedup: float
    verified_speedup: float | None
    reason: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class TimeLimitReached(RunEvent):
    """No new step starts; the run stays unfinished and the same call resumes it."""

    run_id: int
    seconds: float


@dataclasses.dataclass(frozen=True, kw_only=True)
class RunFinished(RunEvent):
    run_id: int


OnEvent = Callable[[RunEvent], None]

__all__ = ["OnEvent", "RunEvent", "RunFinished", "RunStarted", "RunStats", "SkillLearned", "StepDone", "StepStarted",
           "TaskEvent", "TaskStopped", "TimeLimitReached"]
