"""What the loop and a policy exchange for one step.

A policy sees a `StepContext` (the task, the stage, the retrieved memories as
`MemoryNote`s, the start point as a `StartPointView`, each with the verdict its
item stores as a typed `backends.EvalResult`) and answers with a `Proposal`;
`Policy` is the protocol it implements. `FEASIBLE_STATUSES` are the
verdicts the executor calls feasible, as the memory stores them. The loop
(evokernel/loop) and the policies (evokernel/policies, evokernel/ascendc) both
take these from here, so neither imports the other for them.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Protocol, Sequence, runtime_checkable

from backends import EvalResult, LatencySource, Verdict

if TYPE_CHECKING:
    from memory_store import Item

# The verdicts the executor calls feasible, as the memory stores them.
FEASIBLE_STATUSES = tuple(v.value for v in Verdict if v.feasible)


def latency_source_of(item: "Item") -> LatencySource:
    """How the item's latency was obtained (its `latency_source` column); NONE where none was recorded."""
    return LatencySource(item.latency_source or LatencySource.NONE)


def stored_result(item: "Item") -> EvalResult | None:
    """The verdict an item stores in `feedback` (a trace: the whole EvalResult as its step stored it;
    an experience: its status and message), typed; None for items that hold none (API notes, skills)."""
    feedback = item.feedback or {}
    return EvalResult.from_dict(feedback) if "status" in feedback else None


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
    parent_id: int | None = None  # an experience's trace, a trace's start point
    latency_source: LatencySource = LatencySource.NONE  # how latency_ms was obtained
    result: EvalResult | None = None  # the stored verdict (`stored_result`); None for notes and skills
    stage: str = ""  # the step that wrote it: "draft" or "refine"
    reward: float | None = None  # that step's own reward (a refinement's: did its change beat its start point)


@dataclasses.dataclass(frozen=True)
class StartPointView:
    """A kernel a step starts from (or the task's best, shown beside it), with its stored verdict."""

    id: int
    code: str
    latency_ms: float | None
    speedup_eager: float | None
    speedup_compile: float | None
    extra: dict[str, Any]  # the policy's own record of the kernel (its configuration, fingerprint)
    facts: tuple[str, ...] = ()
    latency_source: LatencySource = LatencySource.NONE
    result: EvalResult | None = None  # the verdict its step stored (latency samples, roofline, kernels)


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
    rules: str = "strict"  # the rule set the candidate is judged under (backends.RULE_SETS)
    size: str = "full"  # the task size the step runs at ("full" or "small")
    precision: str = "fp32"  # what the models and floating inputs are cast to (fp32: the task as written)
    # Verified skills (kind best_practice, evokernel/skills) chosen for this step, best first; their own prompt section.
    skills: Sequence[MemoryNote] = ()
    latency_source: LatencySource = LatencySource.NONE  # how this run's latencies are obtained
    best: StartPointView | None = None  # the task's fastest comparable kernel, when it is not the start point
    task_cost: Any = None  # backends.TaskCost (minimum bytes, FLOPs) when the caller knows it; else the policy asks


@dataclasses.dataclass(frozen=True)
class StepPlan:
    """A step before its candidate exists (`Runner.plan_step`): what the policy sees, and
    what rewarding and committing the step need (`Runner.commit_step`)."""

    context: StepContext
    start: "Item | None"  # the start point whose Q_refine the step moves (None when drafting)
    best_ms: float | None  # the task's best comparable latency before the step: the refine reward's b
    iteration: int
    skill_usage: Any = None  # evokernel.skills.Usage of choosing the skills (an LLM rerank), or None


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
    used_skill_ids: tuple[int, ...] | None = None  # None: all skills in the context were used
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float | None = None


@runtime_checkable
class Policy(Protocol):
    name: str
    is_llm: bool

    def propose(self, ctx: StepContext) -> Proposal: ...
