"""Plain data the loop passes around: configuration, a policy's view of a step,
its proposal, and what a run reports per task."""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol, Sequence, runtime_checkable

MEMORY_MODES = ("off", "task-only", "similarity", "value")


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """Everything that shapes a run; recorded with it so a run can be resumed or rebuilt."""

    backend: str = "triton"
    budget: int = 30  # steps per task
    memory_mode: str = "value"
    n_memories: int = 5
    seed: int = 0
    device: str | None = None
    timeout_s: float = 300.0
    port_from: tuple[str, ...] = ()  # other backends whose memories a step may draw on
    trials: int = 5
    reps: int = 100
    baselines: bool = True
    epsilon_start_point: float = 0.1
    # Independent samples (pass@k): every step drafts afresh, with no memories,
    # no feedback, no start point and a draft reward.
    independent_samples: bool = False

    def __post_init__(self) -> None:
        if self.memory_mode not in MEMORY_MODES:
            raise ValueError(f"memory mode must be one of {', '.join(MEMORY_MODES)}, got {self.memory_mode!r}")
        if self.budget < 1:
            raise ValueError(f"budget must be at least 1 step per task, got {self.budget}")

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["port_from"] = list(self.port_from)
        return d


@dataclasses.dataclass(frozen=True)
class MemoryNote:
    """A retrieved memory as a policy sees it."""

    id: int
    kind: str
    task_key: str
    backend: str
    key_text: str
    content: str
    status: str | None
    latency_ms: float | None
    value: float
    extra: dict[str, Any]


@dataclasses.dataclass(frozen=True)
class StartPointView:
    id: int
    code: str
    latency_ms: float | None
    speedup_eager: float | None
    speedup_compile: float | None
    extra: dict[str, Any]
    facts: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class StepContext:
    task_name: str
    task_key: str
    task_path: str
    task_source: str
    category: str
    backend: str
    stage: str  # "draft" | "refine"
    step: int  # 1-based step of this task in this run
    memories: Sequence[MemoryNote]
    feedback: str | None
    start_point: StartPointView | None
    tried: frozenset[str]  # fingerprints of what this task already tried (policy-defined)
    run_id: int
    # Backend API notes (kind "api_note") found by exact name in the last feedback and in the
    # code this step sees, plus concept notes by category; reference material, never value-updated.
    api_notes: Sequence[MemoryNote] = ()


@dataclasses.dataclass(frozen=True)
class Proposal:
    """A candidate, or why there is none.

    `stop` means the policy has nothing more to offer for this task (the
    builtin policy outside its families, or its search space exhausted).
    """

    source: str | None
    key_text: str = ""
    fingerprint: str = ""
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)
    error: str | None = None  # fed back to the next step (e.g. an answer with no code)
    stop: bool = False
    used_memory_ids: tuple[int, ...] | None = None  # None: all memories in the context were shown
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float | None = None


@runtime_checkable
class Policy(Protocol):
    name: str
    is_llm: bool

    def propose(self, ctx: StepContext) -> Proposal: ...


@dataclasses.dataclass
class TaskOutcome:
    name: str
    task_key: str
    path: str
    correct: bool = False
    attempts: int = 0
    first_correct_attempt: int | None = None
    first_latency_ms: float | None = None
    best_latency_ms: float | None = None
    best_item_id: int | None = None
    latency_source: str = "none"
    eager_ms: float | None = None
    compile_ms: float | None = None
    stage: str = "draft"
    stopped: str | None = None  # why the policy stopped early
    statuses: list[str] = dataclasses.field(default_factory=list)
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    compile_ok_attempts: int = 0
    achieved_gbps: float | None = None  # of the best kernel: minimum bytes moved over its latency
    copy_gbps: float | None = None  # device copy bandwidth measured in the same worker

    @property
    def speedup_over_first(self) -> float | None:
        if self.first_latency_ms and self.best_latency_ms:
            return self.first_latency_ms / self.best_latency_ms
        return None

    @property
    def speedup_eager(self) -> float | None:
        return self.eager_ms / self.best_latency_ms if self.eager_ms and self.best_latency_ms else None

    @property
    def speedup_compile(self) -> float | None:
        return self.compile_ms / self.best_latency_ms if self.compile_ms and self.best_latency_ms else None

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d.update(
            speedup_over_first=self.speedup_over_first,
            speedup_eager=self.speedup_eager,
            speedup_compile=self.speedup_compile,
        )
        return d


@dataclasses.dataclass
class RunResult:
    run_id: int
    policy: str
    policy_is_llm: bool
    config: RunConfig
    tasks: list[TaskOutcome]
    resumed: bool = False
    memory_path: str = ""
    accuracy_by_iteration: list[float] = dataclasses.field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "policy": self.policy,
            "policy_is_llm": self.policy_is_llm,
            "config": self.config.to_dict(),
            "resumed": self.resumed,
            "memory": self.memory_path,
            "accuracy_by_iteration": self.accuracy_by_iteration,
            "tasks": [t.to_dict() for t in self.tasks],
        }
