"""The memory items and kernels a prompt shows, as plain data.

`MemoryView` (one retrieved memory item) and `StartPoint` (a feasible kernel
with its measurements) are what `PromptInputs` carries and what the context
sections (`_context`) lay out; both modules take them from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from backends import LatencySource


@dataclass(frozen=True)
class MemoryView:
    """One retrieved memory item, as the prompt needs it.

    `value` is the stage's learned value (Q_draft or Q_refine): the builder
    trims the lowest first. `id` lets the caller map the report back to rows;
    `parent_id` ties an experience to the trace it summarises.
    """

    kind: str  # "experience" | "trace" | "best_practice" | "api_note" | "skill"
    title: str
    content: str
    status: str | None = None  # verdict: "ok", "wrong_result", ...
    latency_ms: float | None = None
    value: float | None = None
    id: int | None = None
    parent_id: int | None = None
    latency_iqr_ms: float | None = None
    latency_source: LatencySource | None = None  # None: not known


@dataclass(frozen=True)
class StartPoint:
    """A feasible kernel (the start point, or the best one) with its measurements."""

    code: str
    latency_ms: float | None = None
    speedup_eager: float | None = None
    speedup_compile: float | None = None
    facts: Sequence[str] = ()
    latency_iqr_ms: float | None = None
    timing_runs: int | None = None
    latency_source: LatencySource | None = None
    min_bytes: int | None = None  # the executor's minimum bytes moved (Roofline.min_bytes_moved)
    id: int | None = None
