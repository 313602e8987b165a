"""What each MCP tool returns, as typed records.

The server returns these dataclasses as they are: the SDK derives each tool's
output schema from them and sends them as structured content (with the same
JSON as text for clients that only read text).
"""

from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass(frozen=True)
class TaskEntry:
    """One task `list_tasks` knows of. `ref` is what to pass as `task` to the other tools."""

    name: str
    ref: str
    path: str | None = None
    key: str | None = None  # the task's key in the memory (size included when not full, precision when not fp32)
    stage: str | None = None  # the stage its next step takes: "draft" until a kernel is feasible, then "refine"
    best_latency_ms: float | None = None
    latency_source: str | None = None
    steps: int | None = None  # steps the memory records for it (every run, every policy)
    note: str = ""


@dataclasses.dataclass(frozen=True)
class SuiteEntry:
    name: str
    path: str
    tasks: int  # task files in it; 0 where the suite is not here (a wheel, not a checkout)


@dataclasses.dataclass(frozen=True)
class TaskList:
    backend: str
    size: str
    precision: str  # what the session's tasks run in (fp32: as written)
    bundled: list[TaskEntry]
    suites: list[SuiteEntry]
    listed: list[TaskEntry]  # the tasks of `source` (a suite, a directory or a file), when one was given
    memory: list[TaskEntry]  # the tasks earlier runs recorded, with their best kernel on this backend


@dataclasses.dataclass(frozen=True)
class TensorSpec:
    shape: list[int]
    dtype: str


@dataclasses.dataclass(frozen=True)
class Tolerance:
    dtype: str
    atol: float
    rtol: float
    source: str  # "task TOLERANCE" or "default for <dtype>"


@dataclasses.dataclass(frozen=True)
class BestKernel:
    """The fastest feasible kernel of a task on this backend, and where it came from."""

    task: str
    key: str
    found: bool
    item_id: int | None = None
    source: str = ""
    status: str | None = None
    latency_ms: float | None = None
    latency_source: str | None = None
    comparable_here: bool = False  # measured the way this server measures (same latency source)
    stage: str | None = None
    run_id: int | None = None
    policy: str | None = None
    device: str | None = None
    size: str | None = None
    precision: str | None = None
    rules: str | None = None
    parent_id: int | None = None
    created_utc: str | None = None
    baselines: dict[str, float] = dataclasses.field(default_factory=dict)
    message: str = ""


@dataclasses.dataclass(frozen=True)
class TaskView:
    """Everything a kernel writer needs about one task."""

    name: str
    ref: str
    path: str
    key: str
    size: str
    precision: str  # the models and floating inputs are cast to it before a candidate runs (fp32: as written)
    category: str
    backend: str
    backend_title: str
    rules: str
    rules_text: str  # the rule set in words, as the loop's prompts state it
    backend_rules: str  # the backend's own rules for a candidate, as the loop's prompts state them
    reference_source: str
    init_inputs: list[str]  # repr of each constructor argument
    inputs: list[list[TensorSpec]]  # get_inputs() first, then each input group
    outputs: list[TensorSpec]
    tolerances: list[Tolerance]
    min_bytes: int | None
    flops: int | None
    latency_source: str  # how latencies are measured by this server
    next_stage: str
    steps: int
    best: BestKernel
    notes: list[str]


@dataclasses.dataclass(frozen=True)
class MemoryRecord:
    """A retrieved memory as the loop puts it in a prompt; `value` is the stage's learned value."""

    id: int
    kind: str
    task_key: str
    task_name: str
    backend: str
    status: str | None
    latency_ms: float | None
    latency_source: str | None
    value: float
    key_text: str
    content: str


@dataclasses.dataclass(frozen=True)
class StartPointRecord:
    """The feasible kernel the loop would refine from (chosen by Q_refine)."""

    id: int
    source: str
    latency_ms: float | None
    latency_source: str | None
    speedup_eager: float | None
    speedup_compile: float | None
    facts: list[str]


@dataclasses.dataclass(frozen=True)
class Retrieval:
    task: str
    key: str
    stage: str
    step: int  # the step of this server's run that a submission would be
    next_stage: str  # the stage a submission is judged in (the loop's rule, whatever `stage` asked)
    memories: list[MemoryRecord]
    skills: list[MemoryRecord]  # verified skills chosen for the step (where the loop selects them); credit them like memories
    api_notes: list[MemoryRecord]  # reference material: shown, never value-updated
    start_point: StartPointRecord | None
    best_latency_ms: float | None
    feedback: str | None  # the verifier's words on this task's last submission in this run
    how_to_credit: str


@dataclasses.dataclass(frozen=True)
class ValueChange:
    id: int
    kind: str
    stage: str
    value_before: float
    value_after: float
    visits: int


@dataclasses.dataclass(frozen=True)
class Submission:
    """The verdict on a candidate and the step it was committed as."""

    task: str
    key: str
    run_id: int
    step: int
    stage: str
    item_id: int  # the trace that now holds the candidate
    verdict: str
    feasible: bool
    message: str
    feedback: str
    latency_ms: float | None
    latency_iqr_ms: float | None
    latency_source: str
    max_abs_error: float | None
    baselines: dict[str, float]
    speedup_eager: float | None
    speedup_compile: float | None
    reward: float
    best_latency_ms: float | None  # the task's best comparable latency after this step
    credited: list[ValueChange]  # the memories (and start point) whose value moved toward the reward
    not_credited: list[str]  # ids left out of the update, with why
    warnings: list[str]
    seconds: float


@dataclasses.dataclass(frozen=True)
class MemoryStats:
    path: str
    counts: dict[str, Any]  # `MemoryStore.stats()`: items, tasks, kinds, backends, runs, steps, value updates
    values: dict[str, Any]  # `MemoryStore.value_summary()`: Q per kind and the most valuable items per stage
    runs_here: list[int]  # the runs this server opened
