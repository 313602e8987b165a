"""The typed records the browser's queries return and its pages show."""

from __future__ import annotations

import dataclasses
import enum
from typing import Any

from memory_store import Item, updated_ids


class BrowseError(ValueError):
    """The bank cannot be browsed, or the server cannot start as asked; the message says why in one line."""


class ItemOrder(str, enum.Enum):
    """How the memory page orders items; `sql` is the ORDER BY it means."""

    NEWEST = "newest"
    Q_DRAFT = "q_draft"
    Q_REFINE = "q_refine"
    VISITS = "visits"

    @property
    def sql(self) -> str:
        return {
            ItemOrder.NEWEST: "id DESC",
            ItemOrder.Q_DRAFT: "q_draft DESC, id DESC",
            ItemOrder.Q_REFINE: "q_refine DESC, id DESC",
            ItemOrder.VISITS: "visits_draft + visits_refine DESC, id DESC",
        }[self]


@dataclasses.dataclass(frozen=True)
class RunSummary:
    """One run as the runs table shows it: what it was asked to do, how far it got, what it spent."""

    id: int
    started_utc: str
    finished_utc: str | None
    status: str
    policy: str
    task_names: tuple[str, ...]
    task_keys: tuple[str, ...]
    budget: int | None
    steps_done: int
    llm_calls: int
    tokens_in: int
    tokens_out: int
    cost_usd: float | None
    options: dict[str, Any]

    @property
    def steps_planned(self) -> int | None:
        return None if self.budget is None else self.budget * len(self.task_names)

    @property
    def running(self) -> bool:
        return self.status == "running"


@dataclasses.dataclass(frozen=True)
class Step:
    """One `steps` row: a stage's reward and the items whose values it moved."""

    id: int
    run_id: int
    task_key: str
    backend: str
    stage: str
    reward: float
    normalized_reward: float | None
    value_target: float
    alpha: float
    context_item_ids: tuple[int, ...]
    start_point_id: int | None
    result_item_id: int | None
    created_utc: str

    @property
    def updated_item_ids(self) -> tuple[int, ...]:
        """The items this step updated: its context and its start point, each once (the store's rule)."""
        return updated_ids(self.context_item_ids, self.start_point_id)


@dataclasses.dataclass(frozen=True)
class Attempt:
    """One kernel a task's steps produced (a `trace` item), with the step that made it."""

    number: int
    item: Item
    step: Step | None

    @property
    def feasible(self) -> bool:
        # The loop stores a latency only for a feasible verdict; a failure's is NULL.
        return self.item.latency_ms is not None

    @property
    def message(self) -> str:
        return str(self.item.feedback.get("message") or "")

    @property
    def feedback_text(self) -> str:
        return str(self.item.feedback.get("feedback") or self.message)

    def baseline_ms(self, which: str) -> float | None:
        value = (self.item.feedback.get("baselines") or {}).get(f"{which}_ms")
        return float(value) if isinstance(value, (int, float)) else None


@dataclasses.dataclass(frozen=True)
class TaskSummary:
    key: str
    name: str
    backend: str
    attempts: int
    feasible: int
    best_ms: float | None
    last_status: str | None
    latency_source: str


@dataclasses.dataclass(frozen=True)
class LineageRow:
    """A kernel in a task's lineage, in depth-first order: `depth` 0 is a draft (or a kernel whose
    start point is not among the task's attempts), depth n + 1 a refinement of the row above at n."""

    attempt: Attempt
    depth: int


@dataclasses.dataclass(frozen=True)
class TaskView:
    summary: TaskSummary
    attempts: tuple[Attempt, ...]
    best: Attempt | None
    lineage: tuple[LineageRow, ...]

    def attempt(self, item_id: int) -> Attempt | None:
        return next((a for a in self.attempts if a.item.id == item_id), None)


@dataclasses.dataclass(frozen=True)
class Usage:
    """How often an item was retrieved into a step's context, and what those steps earned."""

    retrieved: int = 0
    mean_reward: float | None = None
    feasible_after: int = 0


@dataclasses.dataclass(frozen=True)
class ValuePoint:
    """An item's values right after one step updated them."""

    step_id: int
    created_utc: str
    stage: str
    target: float
    q_draft: float
    q_refine: float


@dataclasses.dataclass(frozen=True)
class ItemView:
    item: Item
    parent: Item | None
    children: tuple[Item, ...]
    usage: Usage
    history: tuple[ValuePoint, ...]
    steps_retrieving: tuple[Step, ...]
    made_by: Step | None


@dataclasses.dataclass(frozen=True)
class LLMCall:
    id: int
    run_id: int | None
    step_id: int | None
    provider: str
    model: str
    tokens_in: int
    tokens_out: int
    cost_usd: float | None
    latency_ms: float
    error: str | None
    created_utc: str
    prompt: dict[str, Any]
    response_text: str

    @property
    def purpose(self) -> str:
        # The skill calls tag their purpose; an untagged call is the policy asking for the step's kernel.
        return str(self.prompt.get("purpose") or "candidate")


class MatchedIn(str, enum.Enum):
    """Where a search found its text."""

    KEY_TEXT = "key text"  # the FTS5 index: what retrieval matches
    KERNEL_SOURCE = "kernel source"
    FEEDBACK = "feedback"

    def __str__(self) -> str:
        return self.value


@dataclasses.dataclass(frozen=True)
class SearchHit:
    """An item matching a search; `snippet` alternates plain text and matched text (odd indices)."""

    item_id: int
    kind: str
    task_key: str
    status: str | None
    snippet: tuple[str, ...]
    where: MatchedIn


@dataclasses.dataclass(frozen=True)
class BankStats:
    path: str
    items: int
    by_kind: dict[str, int]
    runs: int
    steps: int
    llm_calls: int
    tasks: int
