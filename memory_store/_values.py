"""Value learning: the Monte Carlo update, reward normalisation, replay.

Pure functions; the store calls them inside its write transactions, and
`replay` calls the same `q_update`, so recomputed values equal incremental
ones bit for bit.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ._types import STAGES


def q_update(q: float, target: float, alpha: float) -> float:
    """One-step Monte Carlo: Q <- Q + alpha (r - Q), no bootstrapping."""
    return q + alpha * (target - q)


@dataclass(frozen=True)
class RewardStats:
    """Running first and second moment of one stage's rewards (PopArt-style).

    Starts at mean 0, second moment 1 (sigma 1): the rewards already live in
    [-1, 1], so early normalised rewards stay close to the raw ones instead of
    being blown up by a variance estimated from two samples.
    """

    count: int = 0
    mean: float = 0.0
    mean_sq: float = 1.0

    @property
    def var(self) -> float:
        return max(0.0, self.mean_sq - self.mean * self.mean)

    def sigma(self, floor: float) -> float:
        return max(floor, math.sqrt(self.var))

    def updated(self, reward: float, momentum: float) -> RewardStats:
        return RewardStats(
            count=self.count + 1,
            mean=momentum * self.mean + (1.0 - momentum) * reward,
            mean_sq=momentum * self.mean_sq + (1.0 - momentum) * reward * reward,
        )

    def normalize(self, reward: float, floor: float) -> float:
        return (reward - self.mean) / self.sigma(floor)


@dataclass(frozen=True)
class ValueState:
    q_draft: float
    q_refine: float
    visits_draft: int
    visits_refine: int

    def stepped(self, stage: str, target: float, alpha: float) -> ValueState:
        if stage == "draft":
            return ValueState(q_update(self.q_draft, target, alpha), self.q_refine, self.visits_draft + 1, self.visits_refine)
        return ValueState(self.q_draft, q_update(self.q_refine, target, alpha), self.visits_draft, self.visits_refine + 1)


@dataclass(frozen=True)
class StepRecord:
    """What replay needs from a `steps` row."""

    stage: str
    value_target: float
    alpha: float
    item_ids: tuple[int, ...]


def updated_ids(context_item_ids: Iterable[int], start_point_id: int | None) -> tuple[int, ...]:
    """The items one step updates: its context and its start point, each once.

    An item both in the context and the start point is one memory that took
    part in one outcome, so it gets one update, not two.
    """
    seen: dict[int, None] = dict.fromkeys(context_item_ids)
    if start_point_id is not None:
        seen.setdefault(start_point_id, None)
    return tuple(seen)


def replay(
    initial: Mapping[int, ValueState], steps: Iterable[StepRecord], *, alpha: float | None = None
) -> dict[int, ValueState]:
    """Rebuild every value from the start states and the steps, in step order.

    `alpha` overrides each step's recorded step size (a what-if replay).
    """
    state = dict(initial)
    for step in steps:
        if step.stage not in STAGES:
            raise ValueError(f"step has unknown stage {step.stage!r}")
        step_alpha = step.alpha if alpha is None else alpha
        for item_id in step.item_ids:
            if item_id in state:
                state[item_id] = state[item_id].stepped(step.stage, step.value_target, step_alpha)
    return state
